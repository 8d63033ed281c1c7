/**
 * @module `skill-mcp audit verify [FILE|-] [--public-key PEM] [--head HEAD]`: the check an operator
 * runs on the runner's machine and an auditor runs on a copy (docs/audit.md). FILE's rotated
 * segments (`FILE.<seq>`) are read with it, oldest first; `-` reads one stream from stdin.
 *
 * Exit 0 intact; 1 naming the first bad line when a line was edited, inserted, deleted or moved,
 * a segment is missing, a signature fails or is another key's, the copy is empty, the copy does
 * not reach the head, lines after the last checkpoint are unsigned (with --public-key), the
 * anchor shows the end cut or rolled back, or a run's result was lost; 3 intact with runs still in
 * progress on a live runner.
 *
 * HEAD is a signed head (`skill-mcp audit head`); a file that is not one is read as the runner's
 * anchor (`audit.head` in the state directory, the default when FILE is the runner's own log).
 */
import { createPublicKey } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { ANCHOR_FILE, checkAnchor, describeMismatch, readAnchor } from '../../runner/audit/anchor.js';
import { eachLine, openLog } from '../../runner/audit/lines.js';
import { escapeControls } from './render.js';
import { isLiveRunner, RUN_END_SLACK_MS } from './runs.js';
import { allSegments } from '../../runner/audit/segments.js';
import { AUDIT_KEY_FILE, headSignedBy, keyIdOf, parseSignedHead, readPublicKey, type SignedHead } from '../../runner/audit/signing.js';
import { ChainVerifier, type VerifyReport } from '../../runner/audit/verify.js';

/** Exit status of `verify` when the log is intact but runs are still in progress. */
export const EXIT_RUNS_OPEN = 3;

function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

function fail(line: string): void {
  out(line);
  process.exitCode = 1;
}

/** The public key: a PEM file or PEM text; without one, the local runner's own key if it is readable. */
function keysFrom(flag: string | undefined, stateDir: string): { keys: Map<string, KeyObject>; from: string } | { why: string } {
  if (flag === undefined) {
    try {
      const key = createPublicKey(readFileSync(join(stateDir, AUDIT_KEY_FILE), 'utf8'));
      return { keys: new Map([[keyIdOf(key), key]]), from: "the runner's own key" };
    } catch {
      return { keys: new Map(), from: 'none' };
    }
  }
  let pem = flag;
  if (!flag.startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(flag, 'utf8');
    } catch (error) {
      return { why: `cannot read --public-key ${flag} (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
    }
  }
  const read = readPublicKey(pem);
  if ('why' in read) return { why: `--public-key: ${read.why}` };
  return { keys: new Map([[read.keyId, read.key]]), from: `key ${read.keyId}` };
}

function where(r: VerifyReport): string {
  const f = r.failure!;
  return `${basename(f.file)} line ${f.line}${f.seq !== undefined ? ` (seq ${f.seq})` : ''}`;
}

export async function verifyMain(
  file: string,
  flags: { publicKey?: string | undefined; head?: string | undefined; named: boolean },
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const stdin = file === '-';
  const stateDir = env['SKILL_MCP_STATE_DIR'] || dirname(file);
  const found = keysFrom(flags.publicKey, stateDir);
  if ('why' in found) return fail(found.why);
  const standalone = flags.publicKey !== undefined;
  // --head: a signed head, or (as before) the anchor file; read before the log (a live runner appends meanwhile).
  let head: SignedHead | undefined;
  let anchorPath = flags.head ?? join(stateDir, ANCHOR_FILE);
  if (flags.head !== undefined && existsSync(flags.head)) {
    const parsed = parseSignedHead(readFileSync(flags.head, 'utf8'));
    if (!('why' in parsed)) {
      head = parsed;
      const key = found.keys.get(head.key_id);
      if (found.keys.size > 0 && (key === undefined || !headSignedBy(head, key))) {
        return fail(
          `BAD HEAD: ${flags.head} is ${key === undefined ? `signed by key ${head.key_id}, not by the public key given` : 'not validly signed'}; get the head from the runner's operator again`,
        );
      }
      anchorPath = '';
    }
  }
  const anchor = standalone || stdin || anchorPath === '' ? undefined : readAnchor(anchorPath);
  const files = stdin ? ['-'] : allSegments(file);
  if (files.length === 0) {
    process.stderr.write(
      `skill-mcp audit: cannot read ${file} (ENOENT)${flags.named ? '' : '; name the log as FILE, or set SKILL_MCP_AUDIT_LOG or SKILL_MCP_STATE_DIR'}\n`,
    );
    process.exitCode = 1;
    return;
  }
  const anchorSeq = anchor !== undefined && !('unreadable' in anchor) ? anchor.seq : undefined;
  const verifier = new ChainVerifier({ keys: found.keys, head, ...(anchorSeq !== undefined ? { watchSeq: anchorSeq } : {}) });
  for (const path of files) {
    verifier.file(path === '-' ? 'stdin' : path);
    try {
      await eachLine(openLog(path), (line, torn) => verifier.line(line, torn));
    } catch (error) {
      return fail(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    if (verifier.failed) break;
  }
  // The runner's own log may be empty (nothing decided yet); the anchor then says whether it was emptied.
  const local = !standalone && !stdin && head === undefined;
  const r = verifier.end({ allowEmpty: local });
  if (!r.ok) return fail(`BROKEN at ${where(r)}: ${r.failure!.why}`);
  for (const s of r.startFindings) {
    const [label, what] = s.state === 'truncated' ? ['TRUNCATED', 'cut off'] : ['ROLLED BACK', 'rolled back or rewritten'];
    return fail(
      `${label} before line ${s.line}: the runner found at its start (line ${s.line}) that the log had been ${what} — it ended at seq ${String(s.lastSeq)}, the runner had last written seq ${String(s.anchorSeq)}`,
    );
  }
  if (r.startsAfter && !r.startsAfter.removedByRetention) {
    return fail(
      `MISSING segment ${escapeControls(r.startsAfter.previous)}: the copy starts at seq ${r.firstSeq}, continuing that segment (seq up to ${r.startsAfter.seq}), which is not here and was not removed by retention`,
    );
  }
  const tail = standalone || stdin || head ? signedTail(r, standalone, found.from) : anchorTail(r, file, flags.head, anchorPath, anchor);
  if (tail.failed) return fail(tail.message);
  const notes = [
    r.startsAfter
      ? `starts at seq ${r.firstSeq} (earlier segments up to ${escapeControls(r.startsAfter.previous)} removed by retention, as recorded)`
      : undefined,
    files.length > 1 ? `${files.length} segments` : undefined,
    r.checkpoints > 0
      ? `${r.checkpoints} checkpoint(s), signed through seq ${r.signedThrough}${r.unchecked > 0 ? ` (${r.unchecked} not checked: no public key)` : ''}`
      : 'no checkpoint',
    head ? `reaches the head (seq ${head.seq})` : undefined,
  ].filter((n) => n !== undefined);
  out(`intact: ${r.lines} lines, chain unbroken; ${tail.message}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}`);
  reportRuns(r);
}

/** A copy standing alone: what the signatures cover, and what they cannot. */
function signedTail(r: VerifyReport, standalone: boolean, keyFrom: string): { message: string; failed: boolean } {
  if (r.unsigned === 0)
    return {
      message: `signed to its last line (${keyFrom}); lines cut after that last checkpoint could only show against a later head (--head)`,
      failed: false,
    };
  const from = (r.signedThrough ?? (r.firstSeq ?? 1) - 1) + 2;
  const message = `UNSIGNED tail: the last ${r.unsigned} line(s) (from seq ${r.checkpoints > 0 ? from : r.firstSeq}) are covered by no checkpoint — the copy was cut after them, or taken while a run was in progress; ask for a fresh copy and its head`;
  return { message, failed: standalone };
}

/**
 * The runner's own log on its machine: the end against the anchor. Security: a `runner.start`
 * line recording a mismatch stays a failure forever (checked above) — the runner found the log
 * cut (or rolled back) before it re-anchored it, and that line is the only trace left.
 */
function anchorTail(
  r: VerifyReport,
  file: string,
  headFlag: string | undefined,
  anchorPath: string,
  anchor: ReturnType<typeof readAnchor>,
): { message: string; failed: boolean } {
  if (anchor === undefined || 'unreadable' in anchor) {
    const why = anchor === undefined ? `no anchor at ${anchorPath}` : `the anchor at ${anchorPath} is unreadable (${anchor.unreadable})`;
    // An anchor the operator named must be there: its absence may be the tampering.
    if (headFlag !== undefined) return { message: `UNVERIFIED tail: ${why}`, failed: true };
    if (r.lines === 0)
      return { message: `nothing recorded yet (${why}; a runner writes its first line with its first decision)`, failed: false };
    return { message: `tail unanchored (${why}): lines deleted from the end cannot be detected`, failed: false };
  }
  if (realOrResolved(anchor.log) !== realOrResolved(file)) {
    return {
      message: `tail unanchored (the anchor at ${anchorPath} is for ${anchor.log}): lines deleted from the end cannot be detected`,
      failed: false,
    };
  }
  if (r.lines === 0)
    return checkAnchor([], anchor).state === 'truncated'
      ? { message: `TRUNCATED: ${describeMismatch(checkAnchor([], anchor))!} (anchor ${anchorPath})`, failed: true }
      : { message: 'empty', failed: true };
  const entries = [
    ...(r.watched ? [{ line: r.watched.line, seq: anchor.seq, sha256: r.watched.sha256 }] : []),
    ...(r.lastSeq !== undefined && r.lastSeq !== anchor.seq ? [{ line: r.lastLine, seq: r.lastSeq, sha256: '' }] : []),
  ];
  const check = checkAnchor(entries, anchor);
  const mismatch = describeMismatch(check);
  if (mismatch !== undefined)
    return { message: `${check.state === 'truncated' ? 'TRUNCATED' : 'ROLLED BACK'}: ${mismatch} (anchor ${anchorPath})`, failed: true };
  if (check.state === 'unknown') return { message: `tail unanchored (the anchored seq ${anchor.seq} is not in this log)`, failed: false };
  if (check.state === 'ahead')
    return {
      message: `tail anchored: ${check.extra} line(s) after the anchored seq ${anchor.seq} (appended by a live runner since the anchor was read, or a runner stopped between writing the log and its anchor)`,
      failed: false,
    };
  return { message: `tail matches the anchor (seq ${anchor.seq})`, failed: false };
}

/**
 * Security: an intact chain with a run accepted and never closed means a script ran and what it
 * did is not on record; a verify that called that log clean would hide it.
 */
function reportRuns(r: VerifyReport): void {
  const now = Date.now();
  let lost = false;
  for (const [runId, open] of r.openRuns) {
    const a = JSON.parse(open.accept.toString('utf8')) as Record<string, unknown>;
    const run = {
      file: open.file,
      line: open.line,
      ts: String(a['ts']),
      timeoutMs: Number(a['timeout_ms'] ?? 0),
      runnerPid: typeof a['runner_pid'] === 'number' ? a['runner_pid'] : undefined,
      skill: a['skill'],
      script: a['script'],
    };
    const what = `run ${runId} (${basename(run.file)} line ${run.line}, ${run.ts}, skill ${escapeControls(JSON.stringify(run.skill))}, script ${escapeControls(JSON.stringify(run.script))})`;
    const endBy = Date.parse(run.ts) + run.timeoutMs + RUN_END_SLACK_MS;
    const gone = run.runnerPid !== undefined && !isLiveRunner(run.runnerPid);
    if (gone || !(now <= endBy)) {
      lost = true;
      out(
        `LOST ${what}: accepted, no run.exit, and ${gone ? `its runner (pid ${run.runnerPid}) is gone` : `its time ran out at ${new Date(endBy).toISOString()} and no exit was written`} — its result is not on record`,
      );
    } else {
      out(
        `OPEN ${what}: accepted, no run.exit yet; ${run.runnerPid === undefined ? 'it may still be running (its time is not up; the line names no runner pid)' : `still running: its runner (pid ${run.runnerPid}) is alive and its time is not up`}`,
      );
    }
  }
  if (lost) process.exitCode = 1;
  else if (r.openRuns.size > 0 && process.exitCode === undefined) process.exitCode = EXIT_RUNS_OPEN;
}
