/**
 * Redaction, the second wall (issue 30 item 5), as the client sees it: the SDK's real Client over
 * stdio, the built bin and its own runner, at whatever level this machine gives (CI runs it at all
 * four). A legacy `env` secret (declared `secret: true`,
 * granted, set in the runner's environment) that a hostile script prints raw, base64, base64url, hex
 * and URL-encoded to stdout and stderr, writes into a returned file and uses as a file name comes
 * back as `[secret:NAME]` in each place, and the result counts the occurrences by name; a value
 * straddling the output cap leaks no prefix. The audit log never holds the value in any
 * spelling, and its stdout digest is that of the redacted bytes. Network: none (the skill declares a
 * destination, so the bubblewrap levels give each run a proxy, which no script here uses).
 *
 * Tier `level`: the run's output is collected differently at each level (in the sandbox, by the
 * root walker or in process), and what comes back must be redacted at every one. Not `node`: the
 * redaction is the runner's own code over bytes (runner/redact*.test.ts run it on every Node major
 * in `unit`); the one test that goes through the run's proxy (node:net, node:http: Node-sensitive)
 * is skill-run-redaction-proxy.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CAP, KEY, KEY_BYTES, PLAIN, RUNNER_NAME, expectNoSpelling, leakyFront, leakySkills, sha, type Ran } from './redaction-fixture.js';
import { audit } from './run-skills.js';

const root = leakySkills();

describe(`redaction, ${RUNNER_NAME}`, () => {
  const front = leakyFront(root);

  describe('attack: a script prints its legacy env secret in every spelling', () => {
    let ran: Ran;
    beforeAll(async () => {
      ran = await front.run('leak.py');
    }, 120_000);

    it('stdout and stderr carry [secret:NAME] in each spelling; the variable not marked secret is untouched', () => {
      for (const stream of ['stdout', 'stderr']) {
        const lines = String(ran.value[stream]).trimEnd().split('\n');
        expect(lines.map((l) => l.split('=')[0])).toEqual(['raw', 'base64', 'base64url', 'hex', 'HEX', 'url', 'form', 'plain']);
        for (const line of lines.slice(0, 7))
          expect(line, `${stream}: ${line}`).toMatch(/^[a-zA-Z0-9]+=.{0,3}\[secret:LEAKY_API_KEY\].{0,3}$/);
        expect(lines[7]).toBe(`plain=${PLAIN}`);
      }
    });

    it("a returned file's bytes and a file named after the value are redacted, with the digests of what is returned", () => {
      const files = ran.value['files'] as { path: string; size: number; sha256: string }[];
      expect(files.map((f) => f.path).sort()).toEqual(['out/[secret:LEAKY_API_KEY].txt', 'out/leak.txt']);
      const leak = ran.resources.find((r) => r.resource.uri.endsWith('/out/leak.txt'))!;
      expect(leak.resource.text).toBe(String(ran.value['stdout']));
      const listed = files.find((f) => f.path === 'out/leak.txt')!;
      expect(listed).toEqual({ path: 'out/leak.txt', size: Buffer.byteLength(leak.resource.text!), sha256: sha(leak.resource.text!) });
      expect(ran.resources.map((r) => decodeURIComponent(r.resource.uri.split('/').pop()!)).sort()).toEqual([
        '[secret:LEAKY_API_KEY].txt',
        'leak.txt',
      ]);
    });

    it('the result counts every occurrence by name, in structuredContent and in words', () => {
      // 7 spellings in stdout, stderr and the file, and the file's name.
      expect(ran.value['redaction']).toEqual({ count: 22, names: [{ name: 'LEAKY_API_KEY', count: 22 }] });
      expect(JSON.parse(ran.texts[0]!)).toEqual(ran.value);
      expect(ran.texts.find((t) => t.startsWith('redacted:'))).toBe(
        'redacted: 22 occurrences of secret values (LEAKY_API_KEY ×22) in what the run returned, each replaced by [secret:NAME].',
      );
    });

    it('nothing the model can read holds the value in any spelling', () => {
      expectNoSpelling(ran.all, 'the tool result');
      for (const r of ran.resources)
        expectNoSpelling(r.resource.blob ? Buffer.from(r.resource.blob, 'base64').toString('latin1') : r.resource.text!, r.resource.uri);
    });

    it('the audit log counts the redactions, digests the redacted stdout, and never holds the value', () => {
      const exit = audit(front.stateDir()).find((l) => l.event === 'run.exit' && l.run_id === ran.value['runId'])!;
      expect(exit).toMatchObject({ redacted: 22, redacted_names: { LEAKY_API_KEY: 22 }, stdout_sha256: sha(String(ran.value['stdout'])) });
      expect((exit['outputs'] as { path: string }[]).map((o) => o.path).sort()).toEqual(['out/[secret:LEAKY_API_KEY].txt', 'out/leak.txt']);
      expectNoSpelling(front.auditText(), 'the audit log');
    });
  });

  describe('attack: a legacy secret base64-encoded and wrapped into lines (encodebytes, PEM, MIME CRLF, coreutils base64)', () => {
    it('each wrapped spelling comes back as [secret:NAME] (it came back whole, redacted: 0), and the audit log holds none of it', async () => {
      const ran = await front.run('wrapped.py');
      const stdout = String(ran.value['stdout']);
      const sections = stdout.split(/^== /m).filter((part) => part !== '');
      expect(sections.map((part) => part.split('\n')[0])).toEqual(expect.arrayContaining(['encodebytes', 'pem', 'mime']));
      for (const section of sections) expect(section, section).toContain('[secret:LEAKY_API_KEY]');
      const redaction = ran.value['redaction'] as { count: number; names: { name: string; count: number }[] };
      expect(redaction.count).toBe(sections.length);
      // No 8 characters of the value's encodings survive, even read across the lines.
      const joined = stdout.replace(/\r?\n/g, '');
      const inner = (pad: number): string => {
        const text = Buffer.concat([Buffer.alloc(pad, 'y'), KEY_BYTES]).toString('base64');
        return text.slice(Math.ceil((pad * 8) / 6) + 1, Math.floor(((pad + KEY_BYTES.length) * 8) / 6) - 1);
      };
      for (const core of [inner(50), inner(40)])
        for (let i = 0; i + 8 <= core.length; i++) expect(joined, core.slice(i, i + 8)).not.toContain(core.slice(i, i + 8));
      const exit = audit(front.stateDir()).find((l) => l.event === 'run.exit' && l.run_id === ran.value['runId'])!;
      expect(exit).toMatchObject({ redacted: sections.length, stdout_sha256: sha(stdout) });
      expectNoSpelling(front.auditText(), 'the audit log');
    }, 120_000);
  });

  describe('attack: a value straddling the output cap', () => {
    it('no prefix of the value comes back; the cut and what was held back are said', async () => {
      const ran = await front.run('cap.py');
      const stdout = String(ran.value['stdout']);
      expect(ran.value).toMatchObject({ truncated: true, stdoutBytes: CAP - 10 + KEY.length + 1 });
      expect(/^x+$/.test(stdout)).toBe(true);
      const held = (ran.value['redaction'] as { heldBack?: { stdout: number; stderr: number } }).heldBack!;
      // What was held back covers the 10 bytes of the value before the cap, and no more came back than the rest.
      expect(held.stdout).toBeGreaterThanOrEqual(10);
      expect(stdout.length).toBe(CAP - held.stdout);
      expect(ran.value['redaction']).toMatchObject({ count: 0, names: [] });
      expect(ran.texts.find((t) => t.startsWith('At the output cap'))).toBe(
        `At the output cap, ${held.stdout} bytes of stdout just before the cut were dropped (a secret value could have begun there).`,
      );
      expect(stdout.includes(KEY.slice(0, 3))).toBe(false);
      const exit = audit(front.stateDir()).find((l) => l.event === 'run.exit' && l.run_id === ran.value['runId'])!;
      expect(exit).toMatchObject({ truncated: true, stdout_held_back: held.stdout, stderr_held_back: 0, stdout_sha256: sha(stdout) });
      expectNoSpelling(front.auditText(), 'the audit log');
    }, 120_000);
  });
});
