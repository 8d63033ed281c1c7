/**
 * The run slots of a real runner, driven over its socket by the front's own RunnerClient: a run
 * over the limit waits (bounded) and is then refused BUSY with the figures without spending its
 * token; a burst the wait absorbs runs in arrival order; a run cancelled while waiting leaves the
 * queue; one client over its share waits while another client's run passes it. Runs are held by
 * scripts the test sees running and releases (test/held-scripts.ts): every ordering is an event.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunnerClient } from '../../server/runner-client.js';
import { awaitAllTitled, HELD_JS, heldOutput, release, tags } from '../held-scripts.js';
import { auditLines, awaitAuditLine, startRunner, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const skills = writeSkills({
  held: { run: [{ script: 'held.js', interpreter: 'node', timeout: 120 }], files: { 'held.js': HELD_JS } },
  echo: {
    run: [{ script: 'run.js', interpreter: 'node', timeout: 20 }],
    files: { 'run.js': 'process.stdout.write(JSON.stringify(process.argv.slice(2)))' },
  },
});
const env = { SKILLS_DIR: skills };
const runners: RunnerHandle[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
});

async function runner(args: string[], queueMs: number): Promise<RunnerHandle> {
  const r = await startRunner({ env: { ...env, SKILL_MCP_RUN_QUEUE_MS: String(queueMs) }, args: ['--uid-range', uidRange(4), ...args] });
  runners.push(r);
  return r;
}

async function token(client: RunnerClient, skill: string, script: string, args: string[]): Promise<string> {
  const prepared = await client.prepare({ skill, script, args });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.message}`);
  return prepared.result.confirmToken;
}

/** A run of the echo skill; `client` names whose run it is. */
async function echo(r: RunnerHandle, arg: string, client?: string) {
  const request = { skill: 'echo', script: 'run.js', args: [arg], confirmToken: await token(r.client, 'echo', 'run.js', [arg]) };
  const cancelId = randomBytes(16).toString('hex');
  return { request, cancelId, answer: r.client.run(request, { cancelId, ...(client ? { client } : {}) }) };
}

/** Starts a held run and resolves once its script is running. */
async function held(r: RunnerHandle, tag: string, client?: string) {
  const confirmToken = await token(r.client, 'held', 'held.js', [tag]);
  const answer = r.client.run({ skill: 'held', script: 'held.js', args: [tag], confirmToken }, client ? { client } : {});
  const [seen] = await awaitAllTitled([`held:${tag}`]);
  return { answer, seen: seen! };
}

function count(r: RunnerHandle, event: string): number {
  return auditLines(r.stateDir).filter((l) => l['event'] === event).length;
}

/** Resolves once the runner has logged `n` lines of `event` in all. */
async function awaitCount(r: RunnerHandle, event: string, n: number): Promise<void> {
  await awaitAuditLine(r.stateDir, () => count(r, event) >= n);
}

function acceptOf(r: RunnerHandle, arg: string): Record<string, unknown> | undefined {
  return auditLines(r.stateDir).find((l) => l['event'] === 'run.accept' && (l['argv'] as string[])[1] === arg);
}

const clientId = (letter: string): string => letter.repeat(32);
/** The queue's places at a limit of one run (runner/requests/admission.ts: MIN_QUEUE). */
const QUEUE_PLACES = 16;

describe('over the limit', () => {
  let r: RunnerHandle;
  beforeAll(async () => {
    r = await runner(['--max-runs', '1'], 1500);
  });

  it('a run waits its bounded time, then is refused BUSY saying how many run and when to retry; the refused token runs later, once', async () => {
    const [tag] = tags(1);
    const first = await held(r, tag!);
    const waitsBefore = count(r, 'run.wait');
    const { request, answer } = await echo(r, 'refused-then-run');
    const refused = await answer;
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'BUSY', busy: { running: 1, maxRuns: 1, queued: 0, clientRunning: 1, clientShare: 1 } },
    });
    if (refused.ok) throw new Error('unreachable');
    // It waited the runner's queue time first (a lower bound: the wait is the behaviour, not its speed).
    expect(refused.error.busy!.waitedMs).toBeGreaterThanOrEqual(1400);
    expect(refused.error.busy!.retryAfterMs).toBeGreaterThan(0);
    expect(refused.error.message).toMatch(/^1 of 1 runs are in progress, 1 of them this client's .*waited \d+ s.*same confirmToken/);
    expect(count(r, 'run.wait')).toBe(waitsBefore + 1);
    expect(
      auditLines(r.stateDir)
        .filter((l) => l['event'] === 'run.reject')
        .at(-1),
    ).toMatchObject({ event: 'run.reject', reason: 'busy', running: 1, max_runs: 1, queued: 0 });

    release([first.seen]);
    expect(await first.answer).toMatchObject({ ok: true, result: { exitCode: 0 } });
    // Not spent by the refusal: the same approval runs now, and only once.
    const ran = await r.client.run(request);
    expect(ran.ok && text(ran.result.stdout)).toBe('["refused-then-run"]');
    expect(await r.client.run(request)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
  });
});

describe('the queue', () => {
  let r: RunnerHandle;
  beforeAll(async () => {
    // One slot, and a wait long enough that only the test's own actions end it.
    r = await runner(['--max-runs', '1'], 30_000);
  });

  it('a burst the wait absorbs: every run starts, in arrival order, as the slot frees', async () => {
    const [tag] = tags(1);
    const first = await held(r, tag!);
    const waits = count(r, 'run.wait');
    const one = await echo(r, 'burst-1');
    await awaitCount(r, 'run.wait', waits + 1);
    const two = await echo(r, 'burst-2');
    await awaitCount(r, 'run.wait', waits + 2);
    expect(acceptOf(r, 'burst-1')).toBeUndefined();

    release([first.seen]);
    const answers = await Promise.all([first.answer, one.answer, two.answer]);
    expect(answers.map((a) => a.ok && a.result.exitCode)).toEqual([0, 0, 0]);
    expect(answers.slice(1).map((a) => a.ok && text(a.result.stdout))).toEqual(['["burst-1"]', '["burst-2"]']);
    const lines = auditLines(r.stateDir);
    const at = (arg: string): number => lines.findIndex((l) => l['event'] === 'run.accept' && (l['argv'] as string[])[1] === arg);
    const firstExit = lines.findIndex((l) => l['event'] === 'run.exit' && answers[0]!.ok && l['run_id'] === answers[0]!.result.runId);
    expect(firstExit).toBeLessThan(at('burst-1'));
    expect(at('burst-1')).toBeLessThan(at('burst-2'));
    expect(acceptOf(r, 'burst-1')!['queued_ms']).toBeGreaterThan(0);
  });

  it('a run cancelled while it waits leaves the queue at once: its place goes to a newcomer, and its approval still holds', async () => {
    const [tag] = tags(1);
    const first = await held(r, tag!);
    const waits = count(r, 'run.wait');
    // Fill the queue (16 places at a limit of 1).
    const waiting = [];
    for (let i = 0; i < QUEUE_PLACES; i++) {
      waiting.push(await echo(r, `queued-${i}`));
      await awaitCount(r, 'run.wait', waits + i + 1);
    }
    const full = await echo(r, 'queue-full');
    const refused = await full.answer;
    expect(refused).toMatchObject({ ok: false, error: { code: 'BUSY', busy: { running: 1, queued: QUEUE_PLACES } } });
    // Refused at once, not after the queue wait (a loaded machine may count a millisecond or two).
    expect(refused.ok ? Infinity : refused.error.busy?.waitedMs).toBeLessThan(1000);

    const cancelled = waiting[0]!;
    expect(await r.client.cancel(cancelled.cancelId)).toMatchObject({ ok: true, result: { cancelled: true } });
    expect(await cancelled.answer).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect(
      auditLines(r.stateDir)
        .filter((l) => l['event'] === 'run.reject')
        .at(-1),
    ).toMatchObject({ reason: 'cancelled' });
    // Its place is free: a newcomer waits instead of being refused at once.
    const newcomer = await echo(r, 'newcomer');
    await awaitCount(r, 'run.wait', waits + QUEUE_PLACES + 1);

    release([first.seen]);
    const rest = await Promise.all([...waiting.slice(1), newcomer].map((w) => w.answer));
    expect(rest.map((a) => a.ok && text(a.result.stdout))).toEqual([
      ...waiting.slice(1).map((w) => JSON.stringify(w.request.args)),
      '["newcomer"]',
    ]);
    expect(acceptOf(r, 'queued-0')).toBeUndefined();
    // Neither the cancelled run nor the one refused at the full queue spent its approval.
    for (const request of [cancelled.request, full.request]) {
      const ran = await r.client.run(request);
      expect(ran.ok && text(ran.result.stdout)).toBe(JSON.stringify(request.args));
    }
  });
});

describe("one client's share", () => {
  let r: RunnerHandle;
  beforeAll(async () => {
    r = await runner(['--max-runs', '2', '--runs-per-client', '1'], 30_000);
  });

  it("a client at its share waits behind its own run, while another client's run takes the free slot and finishes first", async () => {
    const [tag] = tags(1);
    const first = await held(r, tag!, clientId('a'));
    const waits = count(r, 'run.wait');
    const mine = await echo(r, 'same-client', clientId('a'));
    await awaitCount(r, 'run.wait', waits + 1);
    const other = await echo(r, 'other-client', clientId('b'));
    const otherDone = await other.answer;
    expect(otherDone.ok && text(otherDone.result.stdout)).toBe('["other-client"]');
    // The first client's second run is still waiting: the free slot was not its to take.
    expect(acceptOf(r, 'same-client')).toBeUndefined();
    expect(acceptOf(r, 'other-client')).toMatchObject({ client: clientId('b'), queued_ms: 0 });

    release([first.seen]);
    const [firstDone, mineDone] = await Promise.all([first.answer, mine.answer]);
    expect(firstDone.ok && heldOutput(text(firstDone.result.stdout)).report.tag).toBe(tag);
    expect(mineDone.ok && text(mineDone.result.stdout)).toBe('["same-client"]');
    expect(acceptOf(r, 'same-client')).toMatchObject({ client: clientId('a') });
  });
});
