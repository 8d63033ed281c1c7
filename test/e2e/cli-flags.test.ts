/**
 * Every `skill-mcp` command parses its flags the same way (shared/cli-args.ts, node:util parseArgs):
 * `--flag value` and `--flag=value` mean the same, and a flag the command does not know is a usage
 * error — exit 2, the message naming the flag, the command's usage on stderr, nothing on stdout.
 * Driven through the built bin; values are chosen so that nothing starts listening.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { baseEnv, expectNoLeftovers, SERVER_JS, tempDir } from './harness.js';

afterAll(async () => {
  await expectNoLeftovers();
});

function bin(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SERVER_JS, ...args], { encoding: 'utf8', env: { ...baseEnv(), ...env }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('--flag value and --flag=value are the same flag', () => {
  test('runner: both spellings reach the value check (a uid range below 1000 is refused, naming the flag)', () => {
    const dir = tempDir('runner-flags');
    const socket = join(dir, 'sock', 'runner.sock');
    for (const args of [
      ['--socket', socket, '--state-dir', dir, '--uid-range', '5-6'],
      [`--socket=${socket}`, `--state-dir=${dir}`, '--uid-range=5-6'],
    ]) {
      const r = bin(['runner', ...args]);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr).toContain('--uid-range="5-6" is not FIRST-LAST within 1000-65533');
    }
  });

  test('--http: --port P and --port=P both reach the port check', () => {
    for (const args of [['--port', '70000'], ['--port=70000']]) {
      expect(bin(['--http', ...args])).toMatchObject({ status: 1, stderr: expect.stringContaining('--port=70000 is not a port') });
    }
  });

  test("--port (or --host, --metrics-port) without --http: exit 2, and the message says they are the HTTP front's and how to write it", () => {
    for (const args of [['--port', '8080'], ['--port=8080'], ['--metrics-port', '9464']]) {
      const r = bin(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`is a flag of the HTTP front: skill-mcp --http ${args.join(' ')}`);
    }
  });

  test('--help names the metrics flags', () => {
    expect(bin(['--help']).stdout).toContain('--metrics-port M [--metrics-host MH]');
  });

  test('audit: --head H and --head=H name the same anchor; -n N and -nN print the same lines', () => {
    const dir = tempDir('audit-flags');
    const log = join(dir, 'audit.log');
    writeFileSync(log, `${JSON.stringify({ seq: 1, ts: '2026-01-01T00:00:00.000Z', prev: '0'.repeat(64), event: 'e1' })}\n`);
    const anchor = join(dir, 'elsewhere.head');
    for (const args of [['--head', anchor], [`--head=${anchor}`]]) {
      expect(bin(['audit', 'verify', ...args, log])).toMatchObject({ status: 1, stdout: `UNVERIFIED tail: no anchor at ${anchor}\n` });
    }
    const lines = [1, 2, 3].map((seq) => JSON.stringify({ seq, ts: '2026-01-01T00:00:00.000Z', prev: '0'.repeat(64), event: `e${seq}` }));
    writeFileSync(log, `${lines.join('\n')}\n`);
    const spaced = bin(['audit', 'tail', '-n', '2', log]);
    expect(spaced.status).toBe(0);
    expect(spaced.stdout.trim().split('\n')).toHaveLength(2);
    expect(bin(['audit', 'tail', '-n2', log]).stdout).toBe(spaced.stdout);
  });

  test('check: --format json and --format=json', () => {
    const dir = tempDir('check-flags');
    for (const args of [['--format', 'json'], ['--format=json']]) {
      const r = spawnSync(process.execPath, [SERVER_JS, 'check', ...args, dir], { encoding: 'utf8', cwd: dir, env: baseEnv() });
      expect(() => JSON.parse(r.stdout), args.join(' ')).not.toThrow();
    }
  });
});

describe('an unknown flag is a usage error: exit 2, the flag named, the usage on stderr', () => {
  test.each<[string, string[], string, string]>([
    [
      'runner',
      ['runner', '--socket', '/tmp/x.sock', '--state-dir', '/tmp/x', '--sokcet', '/tmp/y'],
      '--sokcet',
      'usage: skill-mcp runner --socket PATH --state-dir DIR',
    ],
    [
      'runner (a switch given a value)',
      ['runner', '--front-secret-stdin=yes'],
      '--front-secret-stdin takes no value',
      'usage: skill-mcp runner',
    ],
    [
      'runner (a flag without its value)',
      ['runner', '--state-dir', '/tmp/x', '--socket'],
      '--socket needs a value',
      'usage: skill-mcp runner',
    ],
    ['--http', ['--http', '--hots', '127.0.0.1'], '--hots', 'usage: skill-mcp --http [--host H] [--port P]'],
    ['audit verify', ['audit', 'verify', '--haed', 'x'], '--haed', 'usage: skill-mcp audit verify'],
    ['audit verify (-n belongs to tail)', ['audit', 'verify', '-n', '3'], '"-n"', 'usage: skill-mcp audit verify'],
    ['doctor', ['doctor', '--jsno'], '--jsno', 'usage: skill-mcp doctor [--json]'],
    ['deps install', ['deps', 'install', '--skil', 'pdf'], '--skil', 'skill-mcp deps install [--skill NAME]'],
    ['doctor (a switch given a value)', ['doctor', '--json=yes'], '--json takes no value', 'usage: skill-mcp doctor [--json]'],
    ['check', ['check', '--strcit', '.'], '--strcit', 'usage: skill-mcp check [--format text|json|sarif] [--strict] [--fix] PATH...'],
  ])('%s', (_label, args, named, usage) => {
    const r = bin(args);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(named);
    expect(r.stderr).toContain(usage);
  });
});
