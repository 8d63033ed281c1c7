/**
 * @module Scripts a test can see running and release, whatever sandbox they are in. A sandboxed
 * script cannot write anywhere the test can read (bubblewrap gives it a private /tmp and a
 * read-only skill), so it signals through what the host always sees: it sets its process title
 * (`/proc/<pid>/cmdline`), and the test finds it there, reads its uid and namespaces, and releases
 * it with SIGUSR2. Concurrency is then proved by events (all titles present at once), not by
 * timing.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * `held.js TAG [BYTES]`: sets its title to `held:TAG` once its SIGUSR2 handler is in place (a
 * signal sent on sight must never meet the default action), waits for SIGUSR2, sleeps 1 s, then
 * prints one JSON line — its tag, start/release/end times and uid — followed by BYTES bytes of the
 * tag's first letter (its own output, for neighbours to check byte for byte), and exits 0.
 */
export const HELD_JS = `const tag = process.argv[2];
const extra = Number(process.argv[3] || '0');
const start = Date.now();
const keep = setInterval(() => {}, 1 << 30);
process.on('SIGUSR2', () => {
  const go = Date.now();
  setTimeout(() => {
    clearInterval(keep);
    process.stdout.write(JSON.stringify({ tag, start, go, end: Date.now(), uid: process.getuid() }) + '\\n' + tag[0].repeat(extra));
  }, 1000);
});
// Only now, with the handler in place: a test releases what it sees by this title.
process.title = 'held:' + tag;
`;

/**
 * `flood.js TAG`: sets its title to `flood:TAG`, ignores SIGTERM, and writes to stdout and stderr
 * as fast as the pipes take it, forever: only a SIGKILL ends it.
 */
export const FLOOD_JS = `process.on('SIGTERM', () => {});
process.title = 'flood:' + process.argv[2];
const chunk = Buffer.alloc(64 * 1024, 'F');
const pour = (stream) => { while (stream.write(chunk)); stream.once('drain', () => pour(stream)); };
pour(process.stdout);
pour(process.stderr);
`;

/** What `held.js` prints first. */
export interface HeldReport {
  tag: string;
  start: number;
  go: number;
  end: number;
  uid: number;
}

/** Tags unique to this test process, so parallel test files never see each other's scripts. */
export function tags(count: number): string[] {
  const nonce = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => `${String.fromCharCode(97 + i)}${nonce}`);
}

export interface Seen {
  pid: number;
  uid: number;
  /** The pid namespace (`pid:[...]`), or undefined when it may not be read. */
  pidNs: string | undefined;
}

/** The live process titled `title`, if any. */
export function findTitled(title: string): Seen | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() !== title) continue;
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      let pidNs: string | undefined;
      try {
        pidNs = readlinkSync(`/proc/${name}/ns/pid`);
      } catch {
        pidNs = undefined;
      }
      return { pid: Number(name), uid: Number(/^Uid:\s+(\d+)/m.exec(status)![1]), pidNs };
    } catch {
      // exited while we looked
    }
  }
  return undefined;
}

/** Resolves once a process titled each of `titles` is alive at the same moment (polled: other processes set them). */
export async function awaitAllTitled(titles: string[]): Promise<Seen[]> {
  for (;;) {
    const seen = titles.map(findTitled);
    if (seen.every((s) => s !== undefined)) return seen as Seen[];
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Lets held scripts finish. */
export function release(seen: Seen[]): void {
  for (const s of seen) process.kill(s.pid, 'SIGUSR2');
}

/** The report line and the rest of a held script's stdout. */
export function heldOutput(stdout: string): { report: HeldReport; rest: string } {
  const newline = stdout.indexOf('\n');
  return { report: JSON.parse(stdout.slice(0, newline)) as HeldReport, rest: stdout.slice(newline + 1) };
}
