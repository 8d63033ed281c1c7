/**
 * @module `skill-mcp audit verify [FILE]` and `skill-mcp audit tail [-n N] [FILE]`: an operator's
 * view of the runner's audit log. FILE defaults to `$SKILL_MCP_AUDIT_LOG`, then
 * `$SKILL_MCP_STATE_DIR/audit.log`. Verify exits 0 when the chain is intact and 1 (naming the
 * first broken line) when it is not; 2 on usage errors.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifyAuditText } from './audit-log.js';

const USAGE = 'usage: skill-mcp audit verify [FILE] | skill-mcp audit tail [-n N] [FILE]';

function defaultFile(): string | undefined {
  const env = process.env;
  if (env['SKILL_MCP_AUDIT_LOG']) return env['SKILL_MCP_AUDIT_LOG'];
  if (env['SKILL_MCP_STATE_DIR']) return join(env['SKILL_MCP_STATE_DIR'], 'audit.log');
  return undefined;
}

/** One decision as a readable line: time, seq, event, then the interesting fields. */
function render(line: string): string {
  try {
    const { seq, ts, prev: _prev, event, ...rest } = JSON.parse(line) as Record<string, unknown>;
    const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return `${String(ts)} #${String(seq)} ${String(event)} ${fields.join(' ')}`;
  } catch {
    return `(unreadable line) ${line.slice(0, 200)}`;
  }
}

export async function auditMain(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  let count = 20;
  const files: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '-n' && command === 'tail') count = Number(rest[++i]);
    else files.push(rest[i]!);
  }
  const file = files[0] ?? defaultFile();
  if ((command !== 'verify' && command !== 'tail') || file === undefined || files.length > 1 || !(count > 0)) {
    process.stderr.write(`${USAGE}\n(FILE defaults to $SKILL_MCP_AUDIT_LOG or $SKILL_MCP_STATE_DIR/audit.log)\n`);
    process.exitCode = 2;
    return;
  }
  const text = readFileSync(file, 'utf8');
  if (command === 'verify') {
    const outcome = verifyAuditText(text);
    if (outcome.ok) {
      process.stdout.write(`intact: ${outcome.lines} lines, chain unbroken\n`);
    } else {
      process.stdout.write(`BROKEN at line ${outcome.line}: ${outcome.why}\n`);
      process.exitCode = 1;
    }
    return;
  }
  const lines = text.split('\n').filter((l) => l !== '');
  for (const line of lines.slice(-count)) process.stdout.write(`${render(line)}\n`);
}
