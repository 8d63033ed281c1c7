/**
 * @module `resources/read` of a 1 MiB binary, ours against the reference in the same run: both
 * servers up at once, reads alternating between them call by call (after untimed warm-up reads),
 * through the SDK's `Client` and through a bare JSON-RPC client; plus our `skill_file` of the same
 * file. Rows for run.mjs.
 */
import { PROBE } from './generate.mjs';
import { RawClient } from './raw-client.mjs';
import { row } from './report.mjs';
import { Session, now } from './session.mjs';

const WARM_UP = 4;

async function timed(fn) {
  const t = now();
  await fn();
  return now() - t;
}

/** `servers`: `{ours, ref}` as run.mjs builds them for one workload. */
export async function readCompareRows({ workload, servers, times, targets }) {
  const uri = `skill://${PROBE.name}/${PROBE.oneMiB}`;
  const sdk = { ours: await Session.open(servers.ours), ref: await Session.open(servers.ref) };
  const raw = { ours: await RawClient.open(servers.ours), ref: await RawClient.open(servers.ref) };
  const samples = { sdk: { ours: [], ref: [] }, raw: { ours: [], ref: [] }, file: [] };
  try {
    // All four servers digest their catalogs right after the start (the reference all of it before
    // it answers): walk each to the end first, so no timed read shares the CPU with that.
    for (const session of Object.values(sdk)) await session.walkSkills();
    for (const client of Object.values(raw)) {
      for (let cursor; ; ) {
        cursor = (await client.request('skills/list', cursor === undefined ? {} : { cursor })).nextCursor;
        if (cursor === undefined) break;
      }
    }
    for (let i = 0; i < WARM_UP + times; i++) {
      for (const kind of i % 2 === 0 ? ['ours', 'ref'] : ['ref', 'ours']) {
        const viaSdk = await timed(() => sdk[kind].request('resources/read', { uri }));
        const viaRaw = await timed(() => raw[kind].request('resources/read', { uri }));
        if (i < WARM_UP) continue;
        samples.sdk[kind].push(viaSdk);
        samples.raw[kind].push(viaRaw);
      }
      const file = await timed(() => sdk.ours.callTool('skill_file', { name: PROBE.name, paths: [PROBE.oneMiB] }));
      if (i >= WARM_UP) samples.file.push(file);
    }
  } finally {
    await Promise.all([...Object.values(sdk).map((s) => s.close()), ...Object.values(raw).map((c) => c.close())]);
  }
  const w = `${workload.skills} skills`;
  return [
    row(
      w,
      'resources/read 1 MiB (binary), interleaved with the ref',
      'ms',
      samples.sdk.ours,
      samples.sdk.ref,
      targets.resourceRead1MiB,
      'SDK client',
    ),
    row(
      w,
      'resources/read 1 MiB (binary), interleaved with the ref',
      'ms',
      samples.raw.ours,
      samples.raw.ref,
      undefined,
      'bare JSON-RPC client',
    ),
    row(w, 'skill_file 1 MiB (binary), between those reads', 'ms', samples.file, undefined, targets.skillFile1MiB, 'SDK client'),
  ];
}
