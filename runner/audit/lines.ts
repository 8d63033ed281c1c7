/**
 * @module Reads a log a line at a time from a stream, in bounded memory (one chunk and one line at
 * most), for `audit verify`, `audit query` and `audit head` over logs of any size. Each line is
 * handed over as the bytes between two newlines (a trailing part without one is flagged `torn`).
 */
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

const CHUNK_BYTES = 1024 * 1024;
/** No real line is this long; a longer one is cut into pieces the chain check then refuses. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export type LineSink = (line: Buffer, torn: boolean) => void;

/** Calls `sink` for each line of `stream`, in order, and `afterChunk` after each chunk read (back-pressure); resolves at its end. */
export async function eachLine(stream: Readable, sink: LineSink, afterChunk?: () => Promise<void>): Promise<void> {
  let carry: Buffer | undefined;
  for await (const piece of stream) {
    const chunk = piece as Buffer;
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      const part = chunk.subarray(start, nl);
      sink(carry ? Buffer.concat([carry, part]) : part, false);
      carry = undefined;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      carry = carry ? Buffer.concat([carry, rest]) : Buffer.from(rest);
      if (carry.length > MAX_LINE_BYTES) {
        sink(carry, true);
        carry = undefined;
      }
    }
    if (afterChunk) await afterChunk();
  }
  if (carry && carry.length > 0) sink(carry, true);
}

/** A file (or `-`: stdin) as a stream of chunks. */
export function openLog(path: string): Readable {
  return path === '-' ? process.stdin : createReadStream(path, { highWaterMark: CHUNK_BYTES });
}
