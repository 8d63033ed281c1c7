/**
 * @module The command line of `skill-mcp check` (`parseArgs`, shared/cli-args.ts). Pure: argv in,
 * options or a usage error out.
 */
import { parseFlags, stringFlag, UsageError, wantsHelp, type FlagSpec } from '../../shared/cli-args.js';

export const FORMATS = ['text', 'json', 'sarif'] as const;
export type Format = (typeof FORMATS)[number];

export type CheckArgs =
  | { kind: 'help' }
  | { kind: 'run'; format: Format; strict: boolean; fix: boolean; paths: string[] }
  | { kind: 'usage'; error: string };

export const CHECK_USAGE = 'usage: skill-mcp check [--format text|json|sarif] [--strict] [--fix] PATH...';

function isFormat(value: string): value is Format {
  return (FORMATS as readonly string[]).includes(value);
}

const FLAGS: Record<string, FlagSpec> = {
  format: { type: 'string' },
  strict: { type: 'boolean' },
  fix: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export function parseCheckArgs(argv: readonly string[]): CheckArgs {
  if (wantsHelp(argv)) return { kind: 'help' };
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv, FLAGS, { positionals: true });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    // Kept from before parseArgs: the message lists the formats a bare --format may take.
    return {
      kind: 'usage',
      error: error.message === '--format needs a value' ? '--format needs a value: text, json or sarif' : error.message,
    };
  }
  const format = stringFlag(parsed.values, 'format') ?? 'text';
  if (!isFormat(format)) return { kind: 'usage', error: `unknown format ${JSON.stringify(format)}; use text, json or sarif` };
  if (parsed.positionals.length === 0) return { kind: 'usage', error: 'name at least one skill folder or folder of skills' };
  return { kind: 'run', format, strict: parsed.values['strict'] === true, fix: parsed.values['fix'] === true, paths: parsed.positionals };
}
