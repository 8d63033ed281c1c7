/**
 * @module What is measured on one workload, for one server: cold starts (a fresh process per
 * sample) and one warm session (repeated calls on a running server). Returns raw samples in ms
 * and MB; run.mjs turns them into medians. The ref server has no tools, so tool rows are ours only.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PROBE } from './generate.mjs';
import { RawClient } from './raw-client.mjs';
import { Session, now } from './session.mjs';

/** spawn → answer of the first `method` request, in a fresh process. */
export async function coldStart(server, method) {
  const session = await Session.open(server);
  try {
    const page = await session.request(method);
    const ms = now() - session.startedAt;
    return {
      ms,
      memory: session.memory(),
      undigested: method === 'skills/list' ? page.skills.filter((s) => !Array.isArray(s.resources)).length : 0,
    };
  } finally {
    await session.close();
  }
}

async function repeat(times, fn) {
  const samples = [];
  for (let i = 0; i < times; i++) {
    const t = now();
    await fn();
    samples.push(now() - t);
  }
  return samples;
}

/** Runs the declared probe script directly, as the baseline for skill_run. */
export function spawnDirect(node, script) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

/** skill_run on the token path: the first call returns a token, the second runs the script. */
export async function skillRunOnce(session) {
  const args = { name: PROBE.name, script: PROBE.script, args: [] };
  const first = await session.callTool('skill_run', args);
  const token = first.structuredContent?.confirmToken;
  if (first.structuredContent?.status !== 'confirmation-required' || typeof token !== 'string') {
    throw new Error(`skill_run did not return a confirmation token: ${JSON.stringify(first.structuredContent).slice(0, 300)}`);
  }
  const second = await session.callTool('skill_run', { ...args, confirmToken: token });
  if (second.structuredContent?.exitCode !== 0)
    throw new Error(`skill_run of the probe did not exit 0: ${JSON.stringify(second.structuredContent).slice(0, 300)}`);
}

/**
 * One running server: the first walk right after start, warm walks, each read path, memory.
 * `kind` is 'ours' or 'ref'.
 */
export async function warmSession(server, kind, root, times) {
  const out = {};
  const session = await Session.open(server);
  try {
    const firstWalk = await session.walkSkills();
    out.firstWalkMs = [firstWalk.ms];
    out.startupMemory = session.memory();
    out.walk = { skills: firstWalk.skills, undigested: firstWalk.undigested, pages: firstWalk.pages.length };
    // Untimed passes first, so warm rows measure steady state rather than V8 still compiling.
    for (let i = 0; i < times; i++) await session.walkSkills();
    const walks = [];
    for (let i = 0; i < times; i++) walks.push(await session.walkSkills());
    out.walkMs = walks.map((w) => w.ms);
    out.pageMs = walks.flatMap((w) => w.pages);
    const uri = (path) => `skill://${PROBE.name}/${path}`;
    out.resourceRead10KBMs = await repeat(times, () => session.request('resources/read', { uri: uri(PROBE.tenKB) }));
    await repeat(times, () => session.request('resources/read', { uri: uri(PROBE.oneMiB) }));
    out.resourceRead1MiBMs = await repeat(times, () => session.request('resources/read', { uri: uri(PROBE.oneMiB) }));
    if (kind === 'ref') {
      out.batch4MiBMs = await repeat(times, () =>
        Promise.all(PROBE.fourMiB.map((p) => session.request('resources/read', { uri: uri(p) }))),
      );
      out.afterBatchMemory = session.memory();
      return out;
    }
    const tools = (await session.request('tools/list')).tools.map((t) => t.name);
    out.skillListMs = await repeat(times, () => session.callTool('skill_list', {}));
    out.skillLoadMs = await repeat(times, () => session.callTool('skill_load', { name: PROBE.name }));
    await repeat(times, () => session.callTool('skill_file', { name: PROBE.name, paths: [PROBE.oneMiB] }));
    out.skillFile1MiBMs = await repeat(times, () => session.callTool('skill_file', { name: PROBE.name, paths: [PROBE.oneMiB] }));
    out.batch4MiBMs = await repeat(times, () => session.callTool('skill_file', { name: PROBE.name, paths: PROBE.fourMiB }));
    out.afterBatchMemory = session.memory();
    if (tools.includes('skill_run')) {
      const direct = join(root, PROBE.name, PROBE.script);
      try {
        await skillRunOnce(session); // the runner's first spawn pays for its own warm-up
        out.skillRunMs = await repeat(times, () => skillRunOnce(session));
        out.directSpawnMs = await repeat(times, () => spawnDirect(server.command, direct));
      } catch (error) {
        // A benchmark reports; it does not fail. The row says why it has no numbers.
        out.skillRunError = error.message.slice(0, 200);
      }
    }
    return out;
  } finally {
    await session.close();
  }
}

/**
 * The same reads through a bare JSON-RPC client (raw-client.mjs): what the server costs without
 * the SDK client's own parsing and buffering. Both servers answer resources/read; ours also skill_file.
 */
export async function rawSession(server, kind, times) {
  const client = await RawClient.open(server);
  try {
    const uri = `skill://${PROBE.name}/${PROBE.oneMiB}`;
    const out = {};
    const page = () => client.request('skills/list', {});
    const read = () => client.request('resources/read', { uri });
    // A full walk first, so the timed calls do not overlap the server's background digest pass.
    for (let cursor; ; ) {
      cursor = (await client.request('skills/list', cursor === undefined ? {} : { cursor })).nextCursor;
      if (cursor === undefined) break;
    }
    await repeat(times * 2, page);
    out.pageMs = await repeat(times * 2, page);
    await repeat(times, read);
    out.resourceRead1MiBMs = await repeat(times, read);
    if (kind === 'ours') {
      const file = () => client.request('tools/call', { name: 'skill_file', arguments: { name: PROBE.name, paths: [PROBE.oneMiB] } });
      await repeat(times, file);
      out.skillFile1MiBMs = await repeat(times, file);
    }
    return out;
  } finally {
    await client.close();
  }
}
