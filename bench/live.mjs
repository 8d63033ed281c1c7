/**
 * @module The live-catalog and search rows of the benchmark (issue 13): what watching the folders
 * costs at idle (inotify watches, RSS against SKILL_MCP_WATCH=off, CPU), the time from a file write
 * to the `list_changed` notification, `skill_search` latency, and how much one `skill_list` answer
 * weighs. Over stdio with the SDK's `Client`, like every other row. `node bench/run.mjs --only=live`
 * runs these alone.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session, memoryOf, now } from './session.mjs';
import { quantile, row } from './report.mjs';

/** Idle CPU is measured over this long, after start-up work (entry digests, index) has settled. */
const IDLE_SECONDS = 10;
const SETTLE_MS = 4000;
const CLOCK_TICKS_PER_SECOND = 100;

/** Queries in the generated skills' vocabulary (prefixes and a typo included) and plain requests. */
export const QUERIES = [
  'parse the report table',
  'convert image font',
  'deploy config option',
  'merge branch commit review',
  'query data model',
  'chart',
  'conf',
  'reprot',
  'fill in a form inside a PDF',
  'make slides for a presentation',
  'check my website works in a browser',
  'spredsheet formulas',
  'write a commit message',
  'how do I split a document into pages',
  'test build deploy',
];

function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function inotifyWatches(pid) {
  let watches = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:inotify') continue;
      watches += (readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').match(/^inotify wd:/gm) ?? []).length;
    } catch {
      // the fd closed while we looked
    }
  }
  return watches;
}

/** Resolves with the time (ms since the session's spawn) at which stderr first matched. */
function stderrLine(session, pattern) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const text = Buffer.concat(session.stderr).toString();
      const match = pattern.exec(text);
      if (match) {
        session.transport.stderr.off('data', check);
        clearTimeout(timer);
        resolve({ at: now() - session.startedAt, match });
      }
    };
    const timer = setTimeout(() => reject(new Error(`no ${pattern} on stderr`)), 120_000);
    session.transport.stderr.on('data', check);
    check();
  });
}

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One server's idle cost after start-up and a full walk: RSS, CPU over IDLE_SECONDS, inotify watches. */
async function idleCost(server, watch) {
  // The watch's line is an internal note: said at SKILL_MCP_LOG_LEVEL=debug (shared/log-line.ts).
  const session = await Session.open({ ...server, env: { ...server.env, SKILL_MCP_WATCH: watch, SKILL_MCP_LOG_LEVEL: 'debug' } });
  try {
    const watching = watch === 'on' ? await stderrLine(session, /watching the skill folders for changes \((\d+) folders\)/) : undefined;
    await session.walkSkills();
    await settle(SETTLE_MS);
    const cpu0 = cpuSeconds(session.pid);
    await settle(IDLE_SECONDS * 1000);
    const cpu = cpuSeconds(session.pid) - cpu0;
    return {
      rssMB: memoryOf(session.pid)?.rssMB,
      cpuPercent: (cpu / IDLE_SECONDS) * 100,
      watches: inotifyWatches(session.pid),
      folders: watching ? Number(watching.match[1]) : 0,
      watchingAtMs: watching?.at,
    };
  } finally {
    await session.close();
  }
}

/** Milliseconds from a file write to the list_changed notification, `samples` times. */
async function writeToNotification(server, root, samples) {
  const session = await Session.open({ ...server, env: { ...server.env, SKILL_MCP_LOG_LEVEL: 'debug' } });
  const times = [];
  try {
    await stderrLine(session, /watching the skill folders for changes/);
    let arrived;
    session.client.setNotificationHandler('notifications/resources/list_changed', () => arrived?.());
    const skills = readdirSync(root).filter((n) => n.startsWith('skill-'));
    for (let i = 0; i < samples; i++) {
      const file = join(root, skills[(i * 97) % skills.length], 'SKILL.md');
      const text = readFileSync(file, 'utf8');
      const seen = new Promise((resolve) => (arrived = resolve));
      const t = now();
      writeFileSync(file, `${text}\nEdited by the benchmark (${i}).\n`);
      await seen;
      times.push(now() - t);
      writeFileSync(file, text);
      await new Promise((resolve) => (arrived = resolve));
    }
    return times;
  } finally {
    await session.close();
  }
}

/** skill_search round trips (SDK client over stdio), every query `rounds` times after a warm-up. */
async function searchLatency(server, rounds) {
  const session = await Session.open({ ...server, env: { ...server.env, SKILL_MCP_LOG_LEVEL: 'debug' } });
  try {
    // Steady state: the start-up work (entry digests, the index, the watch) done first.
    await session.walkSkills();
    for (const query of QUERIES) await session.callTool('skill_search', { query });
    await settle(SETTLE_MS);
    const times = [];
    for (let r = 0; r < rounds; r++) {
      for (const query of QUERIES) {
        const t = now();
        await session.callTool('skill_search', { query });
        times.push(now() - t);
      }
    }
    return times;
  } finally {
    await session.close();
  }
}

/** The size of skill_list answers: the default first page, and every page of a full walk. */
async function listSize(server) {
  const session = await Session.open({ ...server, env: { ...server.env, SKILL_MCP_LOG_LEVEL: 'debug' } });
  try {
    const bytes = (result) => Buffer.byteLength(JSON.stringify(result));
    // The first call also starts the runner (skill_list shows what may run): time a later one.
    await session.callTool('skill_list', {});
    const t = now();
    const first = await session.callTool('skill_list', {});
    const firstMs = now() - t;
    let pages = 1;
    let all = bytes(first);
    for (let cursor = first.structuredContent.nextCursor; cursor !== undefined; pages++) {
      const page = await session.callTool('skill_list', { cursor });
      all += bytes(page);
      cursor = page.structuredContent.nextCursor;
    }
    return {
      firstBytes: bytes(first),
      textBytes: Buffer.byteLength(first.content[0].text),
      skillsOnFirst: first.structuredContent.skills.length,
      total: first.structuredContent.total,
      firstMs,
      pages,
      allBytes: all,
    };
  } finally {
    await session.close();
  }
}

const kB = (n) => `${(n / 1024).toFixed(1)} KiB`;

/**
 * The rows for one workload. `server` is how run.mjs starts ours ({command, args, env}); `root` the
 * generated folder. Watch cost and notification time are measured on the largest workload only.
 */
export async function liveRows(workload, server, root, log, quick) {
  const w = `${workload.skills} skills`;
  const rows = [];
  const rounds = quick ? 2 : 10;
  const search = await searchLatency(server, rounds);
  rows.push(
    row(w, 'skill_search, one query, median (SDK client round trip)', 'ms', search, undefined, 5, `${QUERIES.length} queries × ${rounds}`),
  );
  rows.push(row(w, 'skill_search, one query, p99', 'ms', [quantile(search, 0.99)], undefined, 5));
  log(`  skill_search: p50 ${quantile(search, 0.5).toFixed(2)} ms, p99 ${quantile(search, 0.99).toFixed(2)} ms`);
  const size = await listSize(server);
  rows.push(
    row(
      w,
      'skill_list default page',
      'KiB',
      [size.firstBytes / 1024],
      undefined,
      undefined,
      `${size.skillsOnFirst} of ${size.total} skills; the model reads the text part: ${kB(size.textBytes)}; all ${size.pages} pages: ${kB(size.allBytes)}`,
    ),
  );
  rows.push(row(w, 'skill_list default page (runner already started)', 'ms', [size.firstMs], undefined));
  log(`  skill_list: first page ${kB(size.firstBytes)} (${size.skillsOnFirst} skills), all ${size.pages} pages ${kB(size.allBytes)}`);
  if (workload.id !== 'huge') return rows;
  const on = await idleCost(server, 'on');
  const off = await idleCost(server, 'off');
  log(
    `  watch: ${on.watches} inotify watches for ${on.folders} folders; RSS ${on.rssMB?.toFixed(0)} MB (off: ${off.rssMB?.toFixed(0)}); idle CPU ${on.cpuPercent.toFixed(2)}% (off: ${off.cpuPercent.toFixed(2)}%)`,
  );
  rows.push(
    row(
      w,
      'watch: inotify watches',
      'count',
      [on.watches],
      undefined,
      undefined,
      `${on.folders} folders; ready ${(on.watchingAtMs / 1000).toFixed(1)} s after spawn`,
    ),
  );
  rows.push(row(w, 'watch: RSS at idle, on vs SKILL_MCP_WATCH=off', 'MB', [on.rssMB], [off.rssMB], undefined, 'ref column: watch off'));
  rows.push(
    row(
      w,
      'watch: CPU at idle, on vs SKILL_MCP_WATCH=off',
      '%',
      [on.cpuPercent],
      [off.cpuPercent],
      undefined,
      `over ${IDLE_SECONDS} s; ref column: watch off`,
    ),
  );
  const notify = await writeToNotification(server, root, quick ? 3 : 10);
  rows.push(row(w, 'file write → list_changed notification', 'ms', notify, undefined, 1000, 'includes the 250 ms settle window'));
  log(`  write → notification: p50 ${quantile(notify, 0.5).toFixed(0)} ms`);
  return rows;
}
