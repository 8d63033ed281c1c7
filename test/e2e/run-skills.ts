/**
 * @module Skills whose scripts show what really happened, written at test time into the suite's
 * temp tree (so every script process names that tree in its command line and the leftover check
 * finds it), plus readers of the runner's audit log: the proof of what ran and what did not.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { callTool, tempDir, type ToolAnswer } from './harness.js';

/** Prints its argv and the names of every variable it received, as one JSON line; `fail` exits 3. */
const REPORT_JS = `const args = process.argv.slice(2);
process.stdout.write(JSON.stringify({ args, env: Object.keys(process.env).sort() }) + '\\n');
process.stderr.write('report ran\\n');
process.exitCode = args[0] === 'fail' ? 3 : 0;
`;
/** Runs for argv[0] ms, saying so on stdout first (so a test can see it started). */
const SLEEP_JS = `const ms = Number(process.argv[2] || '1000');
process.stdout.write('started\\n');
setTimeout(() => process.stdout.write('slept ' + ms + '\\n'), ms);
`;

/**
 * A Python module (`from connect import connect`): `connect(target)` sends `CONNECT target` to the
 * run's proxy (`HTTPS_PROXY`) on a fresh connection and returns the proxy's status line.
 */
export const CONNECT_PY = `import os, socket, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
def connect(target):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    s.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (target, target)).encode())
    answer = b""
    while b"\\r\\n\\r\\n" not in answer:
        chunk = s.recv(4096)
        if not chunk: break
        answer += chunk
    s.close()
    return answer.split(b"\\r\\n", 1)[0].decode()
`;
interface Row {
  script: string;
  env?: string[];
  timeoutSeconds?: number;
}

function skill(root: string, name: string, rows: Row[], files: Record<string, string>): void {
  const run = rows
    .map(
      (r) =>
        `    - script: ${r.script}\n      interpreter: node\n      env: [${(r.env ?? []).join(', ')}]\n      timeout: ${r.timeoutSeconds ?? 20}`,
    )
    .join('\n');
  const all = {
    'SKILL.md': `---\nname: ${name}\ndescription: Test skill ${name} for skill_run.\nmcp-host:\n  version: 1\n  run:\n${run}\n---\nRun its scripts.\n`,
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    const full = join(root, name, path);
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    writeFileSync(full, text, { mode: 0o644 });
  }
}

export const SET_VAR = 'E2E_GRANTED_SET';
export const UNSET_VAR = 'E2E_GRANTED_UNSET';
export const SET_VALUE = 'value-the-script-may-see';

/**
 * `reporter`: report.js, other.js (same code, another script), env.js (asks for SET_VAR and
 * UNSET_VAR), sleep.js (120 s budget). `reporter-two`: the same report.js in another skill.
 */
export function writeRunSkills(): string {
  const root = tempDir('run-skills');
  skill(
    root,
    'reporter',
    [
      { script: 'scripts/report.js' },
      { script: 'scripts/other.js' },
      { script: 'scripts/env.js', env: [SET_VAR, UNSET_VAR] },
      { script: 'scripts/sleep.js', timeoutSeconds: 120 },
    ],
    {
      'scripts/report.js': REPORT_JS,
      'scripts/other.js': REPORT_JS,
      'scripts/env.js': REPORT_JS,
      'scripts/sleep.js': SLEEP_JS,
      'scripts/undeclared.js': REPORT_JS,
    },
  );
  skill(root, 'reporter-two', [{ script: 'scripts/report.js' }], { 'scripts/report.js': REPORT_JS });
  return root;
}

export interface AuditLine {
  event: string;
  run_id?: string;
  reason?: string;
  argv?: string[];
  [key: string]: unknown;
}

/** The runner's audit log (JSON lines) in `stateDir`, or nothing before the runner wrote one. */
export function audit(stateDir: string): AuditLine[] {
  const path = join(stateDir, 'audit.log');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditLine);
}

/** How many runs the runner started (`run.accept` lines). */
export function runsStarted(stateDir: string): number {
  return audit(stateDir).filter((l) => l.event === 'run.accept').length;
}

/** Polls the audit log (a file another process appends to) until `match` appears. */
export async function awaitAudit(stateDir: string, match: (line: AuditLine) => boolean, withinMs = 25_000): Promise<AuditLine> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const found = audit(stateDir).find(match);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no matching audit line within ${withinMs} ms:\n${readFileSafe(join(stateDir, 'audit.log'))}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '(no audit log)';
  }
}

/** The JSON line report.js printed. */
export function reported(answer: ToolAnswer): { args: string[]; env: string[] } {
  expect(answer.value['status'], answer.text).toBe('completed');
  return JSON.parse(String(answer.value['stdout'])) as { args: string[]; env: string[] };
}

export interface Preview {
  status: string;
  mode?: string;
  instructions?: string;
  preview: {
    willRun: {
      skill: string;
      interpreter: string;
      argv: string[];
      cwd: string;
      timeoutMs: number;
      envNames: string[];
      envNotSet?: string[];
      envWarning?: string;
      isolation: string;
    };
  };
  confirmToken: string;
  expiresAt: number | string;
}

/** Phase 1 of the token path: must be a preview, never a run. */
export async function askToken(client: Client, args: { name: string; script: string; args?: string[] }): Promise<Preview> {
  const answer = await callTool(client, 'skill_run', { args: [], ...args });
  expect(answer.isError, answer.text).toBe(false);
  expect(answer.value['status'], answer.text).toBe('confirmation-required');
  return answer.value as unknown as Preview;
}

/** The `{code, message}` of a refusal (an isError result). */
export function refusal(answer: ToolAnswer): { code: string; message: string } {
  expect(answer.isError, answer.text).toBe(true);
  return answer.value['error'] as { code: string; message: string };
}

/** Children of `pid` (from /proc/<n>/stat), for finding the guard and the runner behind a front. */
export function childrenOf(pid: number): number[] {
  const kids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') kids.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return kids;
}

export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The front's runner-guard (its child), or undefined while there is none. */
export function guardOf(frontPid: number): number | undefined {
  return childrenOf(frontPid).find((pid) => cmdline(pid).includes('runner-guard'));
}

/** The front's runner, found as the front's guard's child (the runner starts when first needed). */
export function runnerPid(frontPid: number): number {
  const guard = guardOf(frontPid);
  if (guard === undefined) throw new Error('the front has no runner-guard child');
  const runner = childrenOf(guard).find((pid) => / runner --socket /.test(cmdline(pid)));
  if (runner === undefined) throw new Error('the guard has no runner child');
  return runner;
}
