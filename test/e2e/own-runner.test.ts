/**
 * Each standalone runner serves its own front only. Two `skill-mcp` instances started the same way
 * have fronts with the same uid (61183 when started as root; the caller's own uid otherwise), so
 * instance B's front can reach instance A's runner socket. What it lacks is A's per-instance
 * secret, which A's launcher handed to its runner over a pipe: B is refused before it can read
 * A's skills or spend a token there, and A's own front keeps working.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { configView } from '../../shared/config-view.js';
import { FrameCodec } from '../../shared/frame.js';
import { BUNDLED_SKILLS, callTool, ERAS, expectNoLeftovers, FRONT_UID, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken, childrenOf, cmdline, reported, writeRunSkills } from './run-skills.js';

const isRoot = process.getuid?.() === 0;

let root: string;
let a: Served;
let b: Served;
beforeAll(async () => {
  root = writeRunSkills();
  const both = await Promise.all(
    [0, 1].map((i) => serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir(`state-${i}`), 'state') }, ERAS[0]!)),
  );
  a = both[0]!;
  b = both[1]!;
  await Promise.all([skillList(a.client), skillList(b.client)]); // wakes both runners
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await expectNoLeftovers();
});

/** The front's guard and runner processes (the runner starts when first needed). */
function pair(front: Served): { guard: number; runner: number } {
  const guard = childrenOf(front.pid).find((pid) => cmdline(pid).includes('runner-guard'));
  const runner = guard === undefined ? undefined : childrenOf(guard).find((pid) => / runner --socket /.test(cmdline(pid)));
  if (guard === undefined || runner === undefined) throw new Error('the front has no guard or runner child');
  return { guard, runner };
}

function socketOf(front: Served): string {
  const match = / --socket (\S+)/.exec(cmdline(pair(front).runner));
  if (!match) throw new Error('no --socket in the runner command line');
  return match[1]!;
}

/**
 * Connects to `socket` as B's front would (its uid, no secret of A's), sends `requests` on one
 * connection and returns every answer and whether the runner closed the connection.
 */
function asOtherFront(socket: string, requests: unknown[]): Promise<{ frames: unknown[]; closed: boolean }> {
  const out = new FrameCodec(1024 * 1024);
  const bytes = Buffer.concat(requests.map((r) => out.encode(r))).toString('base64');
  const probe = `const s = require('node:net').createConnection(process.argv[1], () => s.write(Buffer.from(process.argv[2], 'base64')));
const got = []; let closed = false;
s.on('data', (c) => got.push(c)); s.on('end', () => { closed = true; s.destroy(); });
s.on('error', () => { closed = true; });
s.on('close', () => { process.stdout.write(JSON.stringify({ bytes: Buffer.concat(got).toString('base64'), closed })); });
setTimeout(() => s.destroy(), 3000).unref();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', probe, socket, bytes], {
      stdio: ['ignore', 'pipe', 'inherit'],
      ...(isRoot ? { uid: FRONT_UID, gid: FRONT_UID } : {}),
    });
    let stdout = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.once('error', reject);
    child.once('exit', () => {
      const { bytes: answer, closed } = JSON.parse(stdout) as { bytes: string; closed: boolean };
      const frames = new FrameCodec(8 * 1024 * 1024).push(Buffer.from(answer, 'base64')).flatMap((e) => (e.ok ? [e.value] : []));
      resolve({ frames, closed });
    });
  });
}

describe("another instance's front on this instance's runner socket", () => {
  test("B's credentials without A's secret: describe and prepare are refused PEER_REFUSED and the connection closes", async () => {
    const view = configView({ SKILLS_DIR: root }, BUNDLED_SKILLS); // A's exact configuration: only the secret is missing
    for (const hello of [
      { type: 'hello', view },
      { type: 'hello', view, frontSecret: randomBytes(32).toString('hex') },
    ]) {
      const { frames, closed } = await asOtherFront(socketOf(a), [
        hello,
        { type: 'describe' },
        { type: 'prepare', skill: 'reporter', script: 'scripts/report.js', args: ['from-b'] },
      ]);
      expect(frames).toEqual([{ ok: false, error: { code: 'PEER_REFUSED', message: expect.stringMatching(/serves another front/) } }]);
      expect(closed).toBe(true);
    }
    const { frames } = await asOtherFront(socketOf(a), [{ type: 'describe' }]);
    expect(frames).toEqual([{ ok: false, error: expect.objectContaining({ code: 'PEER_REFUSED' }) }]);
  });

  test('the per-instance secret is in no command line or environment block of the front, the guard or the runner', async () => {
    for (const front of [a, b]) {
      const { guard, runner } = pair(front);
      expect(cmdline(runner)).toContain('--front-secret-stdin');
      for (const pid of [front.pid, guard, runner]) {
        expect(cmdline(pid)).not.toMatch(/[0-9a-f]{64}/);
        expect(readFileSync(`/proc/${pid}/environ`, 'latin1')).not.toMatch(/[0-9a-f]{64}/);
      }
    }
  });

  test('each front still drives its own runner: A and B both run a script', async () => {
    for (const [front, word] of [
      [a, 'ran-by-a'],
      [b, 'ran-by-b'],
    ] as const) {
      const preview = await askToken(front.client, { name: 'reporter', script: 'scripts/report.js', args: [word] });
      const ran = await callTool(front.client, 'skill_run', {
        name: 'reporter',
        script: 'scripts/report.js',
        args: [word],
        confirmToken: preview.confirmToken,
      });
      expect(reported(ran).args).toEqual([word]);
    }
  });
});
