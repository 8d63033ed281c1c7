/**
 * @module Mirrors this runner's audit log into the shared Redis stream (runner/audit/stream-keys.ts), so
 * `skill-mcp audit tail|verify --redis` see every host. The local log stays the record: the mirror
 * reads it back and copies every line after the host's head in the stream, in order, each append
 * checked against the chain in Redis. So lines written while Redis was away (the `ledger.unavailable`
 * line among them) arrive once it is back, two runners sharing one log never copy a line twice, and
 * nothing is lost or reordered by a failed send: it is simply sent again from the log.
 */
import { closeSync, openSync, readSync, fstatSync, statSync } from 'node:fs';
import { allSegments } from './segments.js';
import { lineHash } from './chain.js';
import { APPEND_LUA, parseHead, streamKeys } from './stream-keys.js';
import type { RedisLink } from '../redis/connection.js';

/** Lines sent per round trip. */
const BATCH_LINES = 200;

interface Parsed {
  seq: number;
  prev: string;
  line: string;
  /** Byte offset just past this line's newline. */
  end: number;
  /** In the live segment (its offset can be a cursor). */
  live?: boolean;
}

function inodeOf(path: string): number {
  try {
    return statSync(path).ino;
  } catch {
    return -1;
  }
}

/**
 * Every line after `seq`, from the rotated segments that may hold some (newest first, back to the
 * one that starts at or before it) and the live one. A segment is at most SKILL_MCP_AUDIT_MAX_BYTES.
 */
function linesAfter(path: string, seq: number): Parsed[] {
  const files = allSegments(path);
  const wanted: string[] = [];
  for (let i = files.length - 1; i >= 0; i--) {
    wanted.unshift(files[i]!);
    const first = parse(readHead(files[i]!), 0)[0];
    if (first === undefined || first.seq <= seq + 1) break;
  }
  return wanted.flatMap((file) => parse(readFrom(file, 0), 0).map((l) => (file === path ? { ...l, live: true } : l)));
}

/** The first 64 KiB of a file (enough for its first line). */
function readHead(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(Math.min(fstatSync(fd).size, 64 * 1024));
    readSync(fd, buf, 0, buf.length, 0);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function parse(text: string, base: number): Parsed[] {
  const out: Parsed[] = [];
  let start = 0;
  let end = base;
  for (;;) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) break; // a line still being written (or torn): not yet
    const line = text.slice(start, nl);
    start = nl + 1;
    end += Buffer.byteLength(line) + 1;
    try {
      const entry = JSON.parse(line) as { seq?: unknown; prev?: unknown };
      if (typeof entry.seq === 'number' && typeof entry.prev === 'string')
        out.push({ seq: entry.seq, prev: entry.prev, line, end, live: false });
    } catch {
      // a broken line: the local verify names it; the next line will not chain in the stream
    }
  }
  return out;
}

function readFrom(path: string, offset: number): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return '';
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

export class AuditMirror {
  #running: Promise<void> | undefined;
  #again = false;
  /** Where the line with `seq` ends in the live segment (of inode `ino`), to read only what is new next time. */
  #cursor = { seq: 0, offset: 0, ino: -1 };
  #divergedWarned = false;

  constructor(
    private readonly link: RedisLink,
    private readonly auditPath: string,
    private readonly warn: (message: string) => void,
  ) {}

  /** Asks for a copy of whatever is new; rounds coalesce, and a failed round waits for the next poke. */
  poke(): void {
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.sync()
      .catch(() => undefined) // Redis is away: the ledger reports it; the next poke sends again
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }

  /** Resolves when the current round (if any) is done: for an orderly stop. */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  private async sync(): Promise<void> {
    const { client, settings } = this.link;
    if (client.status !== 'ready') return;
    const keys = streamKeys(settings.prefix);
    const head = parseHead(await client.hget(keys.heads, settings.hostId)) ?? { seq: 0, sha256: '' };
    // The live segment only grows: what follows the cursor holds every line after a head at or
    // past it — unless it was rotated since (another inode), then the segments are read again.
    const ino = inodeOf(this.auditPath);
    const fromCursor = this.#cursor.seq > 0 && this.#cursor.seq <= head.seq && this.#cursor.ino === ino;
    const lines = (
      fromCursor
        ? parse(readFrom(this.auditPath, this.#cursor.offset), this.#cursor.offset).map((l) => ({ ...l, live: true }))
        : linesAfter(this.auditPath, head.seq)
    ).filter((l) => l.seq > head.seq);
    for (let i = 0; i < lines.length; i += BATCH_LINES) {
      const batch = lines.slice(i, i + BATCH_LINES);
      const pipeline = client.pipeline();
      for (const l of batch)
        pipeline.eval(APPEND_LUA, 2, keys.stream, keys.heads, settings.hostId, String(l.seq), l.prev, l.line, lineHash(l.line));
      const replies = (await pipeline.exec()) ?? [];
      for (const [j, [error, reply]] of replies.entries()) {
        if (error) throw error;
        const l = batch[j]!;
        if (reply === -1) {
          if (!this.#divergedWarned) {
            this.#divergedWarned = true;
            this.warn(
              `audit line seq ${l.seq} does not continue the chain the Redis stream holds for host id ${settings.hostId}: this log was replaced, or another log uses that host id; it is no longer mirrored (set SKILL_MCP_AUDIT_HOST_ID to a new id, or delete the host's head from ${keys.heads})`,
            );
          }
          return;
        }
        if (l.live) this.#cursor = { seq: l.seq, offset: l.end, ino };
      }
    }
  }
}
