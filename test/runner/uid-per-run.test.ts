/**
 * One uid per live run, through a real root runner on its real socket. 24 runs that hold and 60
 * that end at once are asked for together (the uid cursor goes round the 32-uid range again and
 * again, taking uids while other runs hold theirs, most of them before their script has started).
 * Every script leaves a background process in a session of its own. Then: in the audit log, no uid
 * is accepted for a run while another run that holds it has not exited (its reap is done before
 * its exit line); every run ends by itself (exit 0, no signal) — a run that shared a uid would be
 * killed by its neighbour's cleanup; and each holding run is let go one at a time, every other
 * one and its background process surviving each cleanup, while its own leftover is gone.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UidClaims } from '../../runner/uids/claims.js';
import { auditLines, isRoot, startRunner, tempDir, text, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const HOLDING = 24;
const QUICK = 60;
/** How many uids the runner gets: the cursor must go round them again and again. */
const RANGE_SIZE = 32;
/** Unique to this test process: other files' sleepers never match. */
const MARK = `${process.pid}`;

// Blocks SIGUSR2 first, so a release sent as soon as the leftover shows is never lost; the
// leftover `sleep` is the sign that the script is ready.
// `hold.py DIGITS quick` leaves its background process and ends at once.
const HOLD_PY = `import json, os, signal, subprocess, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
subprocess.Popen(['sleep', '9999.' + sys.argv[1]], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if sys.argv[2:] != ['quick']:
    signal.sigwait({signal.SIGUSR2})
sys.stdout.write(json.dumps({'uid': os.getuid()}))
`;

const skills = writeSkills({ hold: { run: [{ script: 'hold.py', interpreter: 'python3', timeout: 300 }], files: { 'hold.py': HOLD_PY } } });
const runners: RunnerHandle[] = [];
let block: { claims: UidClaims; first: number } | undefined;
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  block?.claims.release(block.first);
});

const FIRST_BLOCK = 62464;
const BLOCKS = 90;
const BLOCK_CLAIM_DIR = '/run/skill-mcp-test-uid-blocks';

/**
 * A run-uid range of this test process's own, so two copies of the suite on one machine never
 * share a uid (a runner kills every process of a uid after its run): one of 90 blocks of 32 from
 * 62464, past every other test's range (grep SKILL_MCP_UID_RANGE and --uid-range in test/:
 * 61184-62143, 62400-62415), starting at the block the pid names and taking the first whose claim
 * no live process holds. The claim is the runner's own (runner/uids/claims.ts) on the block's first
 * uid, in a machine-wide folder of this test's alone; it is dropped after the test, and a dead
 * copy's claim is taken over.
 */
function ownRange(): string {
  const claims = new UidClaims(BLOCK_CLAIM_DIR);
  for (let i = 0; i < BLOCKS; i++) {
    const first = FIRST_BLOCK + ((process.pid + i) % BLOCKS) * RANGE_SIZE;
    if (!claims.tryClaim(first)) continue;
    block = { claims, first };
    return `${first}-${first + RANGE_SIZE - 1}`;
  }
  throw new Error(`every one of the ${BLOCKS} uid blocks is claimed by a live process (${BLOCK_CLAIM_DIR})`);
}

interface Leftover {
  pid: number;
  /** The run's script: the leftover's parent. */
  parent: number;
  uid: number;
}

/** The live `sleep 9999.<digits>` process, if any (zombies do not count). */
function leftover(digits: string): Leftover | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8') !== `sleep\0${`9999.${digits}`}\0`) continue;
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      return { pid: Number(name), parent: Number(/^PPid:\s+(\d+)/m.exec(status)![1]), uid: Number(/^Uid:\s+(\d+)/m.exec(status)![1]) };
    } catch {
      // exited while we looked
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe.skipIf(!isRoot)('one uid per live run (root only: only a root runner gives each run a uid)', () => {
  it(`attack: ${HOLDING} held and ${QUICK} quick runs at once over ${RANGE_SIZE} uids, each leaving a background process — no two live runs share a uid, and no run's cleanup kills another run`, async () => {
    const range = ownRange();
    const claims = join(tempDir('uid-claims'), 'claims');
    mkdirSync(claims, { mode: 0o700 });
    chmodSync(claims, 0o700);
    const r = await startRunner({
      env: {
        SKILLS_DIR: skills,
        SKILL_MCP_MAX_RUNS: '32',
        SKILL_MCP_RUNS_PER_CLIENT: '32',
        SKILL_MCP_RUN_QUEUE_MS: '30000',
        SKILL_MCP_UID_CLAIM_DIR: claims,
      },
      args: ['--uid-range', range],
    });
    runners.push(r);
    const digits = Array.from({ length: HOLDING + QUICK }, (_, i) => `${MARK}${String(i).padStart(3, '0')}`);
    const requests: { skill: string; script: string; args: string[]; confirmToken: string }[] = [];
    for (const [i, d] of digits.entries()) {
      const args = i < HOLDING ? [d] : [d, 'quick'];
      const prepared = await r.client.prepare({ skill: 'hold', script: 'hold.py', args });
      if (!prepared.ok) throw new Error(prepared.error.message);
      requests.push({ skill: 'hold', script: 'hold.py', args, confirmToken: prepared.result.confirmToken });
    }
    const held = digits.slice(0, HOLDING);
    // The held runs first (each in a slot of its own), then every quick one at once: they pass
    // through the 8 slots left, so uids are taken and given back while the held runs hold theirs.
    const answers = requests.slice(0, HOLDING).map((request) => r.client.run(request, { timeoutMs: 300_000 }));
    while (!held.every((d) => leftover(d))) await new Promise((resolve) => setTimeout(resolve, 50));
    // A run refused BUSY (the queue's wait ran out on a slow machine) keeps its approval: asked again, as a client would.
    const untilRun = async (request: (typeof requests)[number]): ReturnType<RunnerHandle['client']['run']> => {
      for (;;) {
        const answer = await r.client.run(request, { timeoutMs: 300_000 });
        if (answer.ok || answer.error.code !== 'BUSY') return answer;
      }
    };
    const quick = await Promise.all(requests.slice(HOLDING).map(untilRun));
    for (const [k, answer] of quick.entries()) {
      expect(answer, `quick run ${k}`).toMatchObject({ ok: true, result: { exitCode: 0, signal: null } });
      expect(leftover(digits[HOLDING + k]!), `quick run ${k}'s own leftover is reaped`).toBeUndefined();
    }
    // The held runs are all holding now, with their leftovers, each under a uid of its own.
    let seen = held.map(leftover);
    while (!seen.every(Boolean)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen = held.map(leftover);
    }
    const holding = seen as Leftover[];
    expect(new Set(holding.map((s) => s.uid)).size).toBe(HOLDING);

    // One at a time: each ends, its reap runs, and nobody else is touched.
    for (const [i, s] of holding.entries()) {
      process.kill(s.parent, 'SIGUSR2');
      const answer = await answers[i]!;
      expect(answer, `held run ${i}`).toMatchObject({ ok: true, result: { exitCode: 0, signal: null } });
      if (answer.ok) expect(JSON.parse(text(answer.result.stdout))).toEqual({ uid: s.uid });
      expect(leftover(held[i]!), `held run ${i}'s own leftover is reaped`).toBeUndefined();
      for (const [j, other] of holding.entries()) {
        if (j > i)
          expect(
            alive(other.parent) && alive(other.pid),
            `held run ${j} (uid ${other.uid}) survives run ${i}'s cleanup (uid ${s.uid})`,
          ).toBe(true);
      }
    }

    // The log, in order: a uid is accepted for a run only when no run holding it is still running.
    const holder = new Map<number, string>();
    let accepted = 0;
    for (const line of auditLines(r.stateDir)) {
      if (line['event'] === 'run.accept') {
        const uid = line['uid'] as number;
        expect(holder.get(uid), `uid ${uid} accepted for ${String(line['run_id'])} while ${holder.get(uid)} held it`).toBeUndefined();
        holder.set(uid, line['run_id'] as string);
        accepted++;
      }
      if (line['event'] === 'run.exit') {
        for (const [uid, run] of holder) if (run === line['run_id']) holder.delete(uid);
      }
    }
    expect(accepted).toBe(HOLDING + QUICK);
    expect(holder.size).toBe(0);
  }, 300_000);
});
