/**
 * @module Rotation of the audit log (`SKILL_MCP_AUDIT_MAX_BYTES`, `SKILL_MCP_AUDIT_KEEP`). The live
 * segment is the configured file (`audit.log`); a full one is renamed `audit.log.<seq of its first
 * line, 12 digits>` and a new one starts whose first line, `audit.segment`, names the previous
 * segment and continues its chain (its `prev` is the sha256 of the previous segment's last line —
 * a signed checkpoint — and its seq the next one), so the chain runs unbroken across segments.
 *
 * A crash may stop a rotation at any step; every on-disk state it can leave is one the next append
 * settles without losing a line: the new segment is written whole to `audit.log.next` (fsynced)
 * before the old one is renamed, and renamed into place after — `next` beside a live segment is a
 * rotation that did not happen (removed), `next` without one is a rotation to finish (renamed).
 */
import { closeSync, constants, existsSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { lastLine, lineHash, seqOf } from './chain.js';
import { openPrivateFile } from '../state.js';

const SEGMENT_DIGITS = 12;
export const NEXT_SUFFIX = '.next';

/** Points inside a rotation where a test may stop the process (nothing else calls them). */
export type RotationPoint = 'rotate-next-written' | 'rotate-renamed';

export function segmentPath(active: string, firstSeq: number): string {
  return `${active}.${String(firstSeq).padStart(SEGMENT_DIGITS, '0')}`;
}

/** The rotated segments of `active`, oldest first (full paths). */
export function listSegments(active: string): string[] {
  const prefix = `${basename(active)}.`;
  const pattern = new RegExp(`^\\d{${SEGMENT_DIGITS}}$`);
  let names: string[];
  try {
    names = readdirSync(dirname(active));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && pattern.test(n.slice(prefix.length)))
    .sort()
    .map((n) => join(dirname(active), n));
}

/** Every segment of the log, oldest first, the live one last (when it exists). */
export function allSegments(active: string): string[] {
  return [...listSegments(active), ...(existsSync(active) ? [active] : [])];
}

/** Finishes or undoes a rotation a crash interrupted (under the audit lock). */
export function settleRotation(active: string): 'none' | 'finished' | 'undone' {
  const next = `${active}${NEXT_SUFFIX}`;
  if (!existsSync(next)) return 'none';
  if (existsSync(active)) {
    unlinkSync(next);
    return 'undone';
  }
  renameSync(next, active);
  fsyncDir(dirname(active));
  return 'finished';
}

/** The latest rotated segment's last line, to continue the chain in a new live segment. */
export function latestSegmentEnd(active: string): { path: string; seq: number; sha256: string } | undefined {
  const latest = listSegments(active).at(-1);
  if (latest === undefined) return undefined;
  const fd = openSync(latest, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const { line } = lastLine(fd);
    const seq = line === undefined ? undefined : seqOf(line);
    return line === undefined || seq === undefined ? undefined : { path: latest, seq, sha256: lineHash(line) };
  } finally {
    closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Rotates: `firstLine` is the new segment's first line (made by the writer from the old segment's
 * end), written whole to `next` before anything is renamed. Segments past `keep` are removed after
 * (their names are in `firstLine`'s `removed`). fsyncs here are synchronous: a rotation is rare
 * (one per `SKILL_MCP_AUDIT_MAX_BYTES`) and must be whole before the lock is released.
 */
export function rotate(
  active: string,
  firstSeqOfOld: number,
  firstLine: string,
  remove: readonly string[],
  stopAt?: (point: RotationPoint) => void,
): void {
  const next = `${active}${NEXT_SUFFIX}`;
  try {
    unlinkSync(next);
  } catch {
    // none: the usual case
  }
  const fd = openPrivateFile(next, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL);
  try {
    writeSync(fd, `${firstLine}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  stopAt?.('rotate-next-written');
  renameSync(active, segmentPath(active, firstSeqOfOld));
  stopAt?.('rotate-renamed');
  renameSync(next, active);
  fsyncDir(dirname(active));
  for (const path of remove) {
    try {
      unlinkSync(path);
    } catch {
      // already gone (another runner's retention): nothing to keep
    }
  }
}

/** Segments to remove so that at most `keep` rotated ones remain once one more is added. */
export function retentionVictims(active: string, keep: number | undefined): string[] {
  if (keep === undefined) return [];
  const existing = listSegments(active);
  return existing.slice(0, Math.max(0, existing.length + 1 - keep));
}
