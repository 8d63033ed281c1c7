/**
 * Many runs at once (issue #17), as a client sees them: the SDK's `Client` over stdio, the built
 * bin, its own runner allowed four runs at once. Parallel `skill_run` calls really overlap — every
 * script is seen running at the same moment, each under its own uid (root) or pid namespace — and
 * a hostile run (floods both streams, ignores SIGTERM) or a cancelled one leaves its neighbours
 * running, each finishing with its own output. Scripts are held and released by the test
 * (test/held-scripts.ts), so nothing here depends on how busy the machine is.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { awaitAllTitled, findTitled, FLOOD_JS, HELD_JS, heldOutput, release, tags } from '../held-scripts.js';
import { hasNamespaces } from '../levels.js';
import type { IsolationLevel } from '../../shared/protocol.js';
import { ERAS, expectNoLeftovers, FRONT_UID, serve, skillList, tempDir, type Served, type ToolAnswer } from './harness.js';
import { askToken, audit, awaitAudit } from './run-skills.js';

const isRoot = process.getuid?.() === 0;
const NEIGHBOUR_BYTES = 300_000;

function writeSkill(): string {
  const root = tempDir('parallel-skills');
  const files: Record<string, string> = {
    'SKILL.md': `---\nname: par\ndescription: Scripts held and released by the test.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/held.js\n      interpreter: node\n      timeout: 120\n    - script: scripts/flood.js\n      interpreter: node\n      timeout: 120\n---\nHeld scripts.\n`,
    'scripts/held.js': HELD_JS,
    'scripts/flood.js': FLOOD_JS,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, 'par', path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, 'par', path), text, { mode: 0o644 });
  }
  return root;
}

/** Bytes a process has written so far (/proc/<pid>/io), or undefined where that may not be read. */
function bytesWritten(pid: number): number | undefined {
  try {
    return Number(/^wchar:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
  } catch {
    return undefined;
  }
}

let served: Served;
let stateDir: string;
let level: IsolationLevel;
beforeAll(async () => {
  stateDir = join(tempDir('state'), 'state');
  served = await serve(
    {
      SKILLS_DIR: writeSkill(),
      SKILL_MCP_STATE_DIR: stateDir,
      SKILL_MCP_MAX_RUNS: '4',
      SKILL_MCP_KILL_GRACE_MS: '500',
      SKILL_MCP_DRAIN_MS: '300',
    },
    ERAS[0]!,
  );
  level = (await skillList(served.client)).isolation.level as IsolationLevel;
});
afterAll(async () => {
  await served?.close();
  await expectNoLeftovers();
});

/** Phase 1 (the preview and its token), then phase 2 started: `done` is its pending answer. */
async function startRun(script: string, args: string[], signal?: AbortSignal): Promise<{ done: Promise<ToolAnswer> }> {
  const { confirmToken } = await askToken(served.client, { name: 'par', script, args });
  const call = served.client.callTool(
    { name: 'skill_run', arguments: { name: 'par', script, args, confirmToken } },
    signal ? { signal } : {},
  );
  return {
    done: call.then((result) => {
      const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
      return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown>, text };
    }),
  };
}

function acceptOf(tag: string): Record<string, unknown> {
  const line = audit(stateDir).find((l) => l.event === 'run.accept' && l.argv?.[1] === tag);
  if (!line) throw new Error(`no run.accept for ${tag}`);
  return line;
}

describe('runs at once through the real client', () => {
  test('four skill_run calls at once are all running at the same moment, each in its own uid (root) or pid namespace, each with its own output', async () => {
    const four = tags(4);
    const calls = [];
    for (const tag of four) calls.push((await startRun('scripts/held.js', [tag])).done);
    // The proof of overlap is an event: all four scripts alive at once, seen from the host.
    const seen = await awaitAllTitled(four.map((t) => `held:${t}`));
    if (isRoot) {
      expect(new Set(seen.map((s) => s.uid)).size).toBe(4);
      for (const s of seen) expect([0, FRONT_UID]).not.toContain(s.uid);
    }
    if (hasNamespaces(level) && seen.every((s) => s.pidNs !== undefined)) expect(new Set(seen.map((s) => s.pidNs)).size).toBe(4);
    release(seen);

    const answers = await Promise.all(calls);
    const reports = answers.map((a) => {
      expect(a.value, a.text).toMatchObject({ status: 'completed', exitCode: 0, truncated: false });
      return heldOutput(String(a.value['stdout'])).report;
    });
    expect(reports.map((r) => r.tag)).toEqual(four);
    // Each started before any was released: all four were running at once by their own clocks too.
    expect(Math.max(...reports.map((r) => r.start))).toBeLessThanOrEqual(Math.min(...reports.map((r) => r.go)));
    const accepts = four.map(acceptOf);
    expect(new Set(accepts.map((a) => a['run_id'])).size).toBe(4);
    if (isRoot) expect(accepts.map((a) => a['uid'])).toEqual(seen.map((s) => s.uid));
    // One stdio session is one client, named to the runner by a session id (never empty).
    expect(new Set(accepts.map((a) => a['client'])).size).toBe(1);
    expect(accepts[0]!['client']).toMatch(/^[0-9a-f]{32}$/);
  });

  test('a hostile run that floods both streams and ignores SIGTERM does not break its neighbours: they finish with their own output, byte for byte', async () => {
    const [hostileTag, ...three] = tags(4);
    const hostile = new AbortController();
    const flood = (await startRun('scripts/flood.js', [hostileTag!], hostile.signal)).done;
    flood.catch(() => undefined);
    const [flooding] = await awaitAllTitled([`flood:${hostileTag}`]);
    process.kill(flooding!.pid, 'SIGTERM');
    // Well past the 1 MiB the runner keeps of a stream, where the kernel lets us count it.
    while ((bytesWritten(flooding!.pid) ?? Infinity) < 4 * 1024 * 1024) await new Promise((resolve) => setTimeout(resolve, 25));

    const calls = [];
    for (const tag of three) calls.push((await startRun('scripts/held.js', [tag!, String(NEIGHBOUR_BYTES)])).done);
    const seen = await awaitAllTitled([...three.map((t) => `held:${t}`), `flood:${hostileTag}`]);
    // The same flood process, alive after our SIGTERM, running alongside all three.
    expect(seen[3]!.pid).toBe(flooding!.pid);
    release(seen.slice(0, 3));
    const answers = await Promise.all(calls);
    answers.forEach((a, i) => {
      expect(a.value, a.text.slice(0, 500)).toMatchObject({ status: 'completed', exitCode: 0, truncated: false, timedOut: false });
      const { report, rest } = heldOutput(String(a.value['stdout']));
      expect(report.tag).toBe(three[i]);
      expect(rest).toBe(three[i]![0]!.repeat(NEIGHBOUR_BYTES));
    });

    // The hostile run is still going; cancelling it kills it, and the log has its flood counted.
    expect(findTitled(`flood:${hostileTag}`)?.pid).toBe(flooding!.pid);
    const runId = acceptOf(hostileTag!)['run_id'];
    hostile.abort();
    await expect(flood).rejects.toThrow();
    const exit = await awaitAudit(stateDir, (l) => l.event === 'run.exit' && l.run_id === runId);
    expect(exit).toMatchObject({ ended: 'cancelled', truncated: true });
    expect(exit['stdout_bytes']).toBeGreaterThan(1024 * 1024);
  });

  test('cancelling one of three running runs kills that one only: the other two keep running and finish with their own output', async () => {
    const three = tags(3);
    const middle = new AbortController();
    const calls = [];
    for (const [i, tag] of three.entries())
      calls.push((await startRun('scripts/held.js', [tag], i === 1 ? middle.signal : undefined)).done);
    const seen = await awaitAllTitled(three.map((t) => `held:${t}`));
    const runId = acceptOf(three[1]!)['run_id'];
    middle.abort();
    await expect(calls[1]).rejects.toThrow();
    expect(await awaitAudit(stateDir, (l) => l.event === 'run.exit' && l.run_id === runId)).toMatchObject({ ended: 'cancelled' });
    // The cancelled script goes (awaited: the kernel ends a pid namespace's processes as it tears it
    // down); its neighbours are the same processes as before, still running.
    while (findTitled(`held:${three[1]}`) !== undefined) await new Promise((resolve) => setTimeout(resolve, 25));
    expect([findTitled(`held:${three[0]}`)?.pid, findTitled(`held:${three[2]}`)?.pid]).toEqual([seen[0]!.pid, seen[2]!.pid]);
    release([seen[0]!, seen[2]!]);
    const [first, , last] = await Promise.all(calls.map((c) => c.catch(() => undefined)));
    for (const [answer, tag] of [
      [first, three[0]],
      [last, three[2]],
    ] as const) {
      expect(answer?.value).toMatchObject({ status: 'completed', exitCode: 0 });
      expect(heldOutput(String(answer!.value['stdout'])).report.tag).toBe(tag);
    }
  });
});
