/** @module The outcome of an audit line about a run (docs/audit.md): what `audit query --outcome` matches and OCSF's status reads. */

/** The outcomes a line has (empty: it is not about a run's result). */
export function outcomesOf(line: Record<string, unknown>): string[] {
  switch (line['event']) {
    case 'run.accept':
      return ['accepted'];
    case 'run.reject':
      return ['rejected', String(line['reason'])];
    case 'run.prepare':
      return line['refused'] !== undefined ? ['refused', String(line['refused'])] : ['prepared'];
    case 'run.exit': {
      const ended = line['ended'];
      if (ended === 'timeout' || ended === 'cancelled' || ended === 'error') return [ended];
      return [line['exit_code'] === 0 ? 'ok' : 'failed'];
    }
    default:
      return [];
  }
}
