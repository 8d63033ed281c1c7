/**
 * @module `skill-mcp pull`: copies skills from an MCP server into a skills folder (Claude Code's
 * `~/.claude/skills`, Codex's, Cursor's...). Discover and plan (remote.ts), compare with the lock
 * and the folder, download and check (download.ts), write whole (install.ts), record (lock.ts).
 * The report goes to stdout, one line a skill; progress of big skills to stderr.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PULL_USAGE, parsePullArgs, type PullArgs } from './args.js';
import { connect, type Connection, type Source } from './connect.js';
import { DownloadRefused, downloadSkill } from './download.js';
import { installSkill, localChange, targetState } from './install.js';
import { LOCK_FILE, LockError, digestsOf, readLock, sameDigests, writeLock, type Lock } from './lock.js';
import { discover, type RemoteSkill } from './remote.js';
import { errorText } from './error-text.js';

/** A skill this large reports its progress on stderr. */
const PROGRESS_MIN_FILES = 50;
const PROGRESS_MIN_BYTES = 1024 * 1024;

/**
 * The source as the lock records it: a URL without credentials, query or fragment (they may hold
 * secrets; headers are never recorded), or the command line.
 */
export function lockedSource(source: Source): Source {
  if (!('url' in source)) return { command: [...source.command] };
  const url = new URL(source.url);
  return { url: `${url.origin}${url.pathname}` };
}

function describeSource(source: Source): string {
  return 'url' in source ? source.url : source.command.join(' ');
}

function sizeText(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

interface Tally {
  added: number;
  updated: number;
  unchanged: number;
  refused: number;
}

class Report {
  readonly tally: Tally = { added: 0, updated: 0, unchanged: 0, refused: 0 };
  line(kind: keyof Tally | 'gone', name: string, text?: string): void {
    if (kind !== 'gone') this.tally[kind]++;
    process.stdout.write(`${kind.padEnd(9)} ${name}${text ? `: ${text}` : ''}\n`);
  }
}

/** Reports a big skill's download at each quarter, on stderr. */
function progressFor(skill: RemoteSkill): ((done: number, total: number, bytes: number) => void) | undefined {
  const total = skill.files.reduce((sum, f) => sum + f.size, 0);
  if (skill.files.length < PROGRESS_MIN_FILES && total < PROGRESS_MIN_BYTES) return undefined;
  let shown = 0;
  return (done, count, bytes) => {
    const quarter = Math.floor((done * 4) / count);
    if (quarter <= shown) return;
    shown = quarter;
    process.stderr.write(`pull: ${skill.name}: ${done}/${count} files, ${sizeText(bytes)} of ${sizeText(total)}\n`);
  };
}

/** One skill: decide from the lock and the folder, then download, check and write it (or say why not). */
async function pullOne(connection: Connection, args: PullArgs, dir: string, lock: Lock, skill: RemoteSkill, report: Report): Promise<void> {
  const target = join(dir, skill.name);
  const state = targetState(target);
  if (state.kind === 'refused') return report.line('refused', skill.name, `${state.why}; nothing written`);
  const source = lockedSource(args.source);
  const locked = lock.skills[skill.name];
  const remote = digestsOf(skill.files);
  const sameSource = locked !== undefined && JSON.stringify(locked.source) === JSON.stringify(source);
  if (state.kind === 'folder') {
    const change = locked ? localChange(target, locked) : undefined;
    if (!args.force) {
      if (!locked) return report.line('refused', skill.name, `${target} exists and was not written by pull (${LOCK_FILE} has no entry for it); --force replaces it`);
      if (!sameSource) return report.line('refused', skill.name, `${target} was pulled from ${describeSource(locked.source)}; --force replaces it with the copy from here`);
      if (change) return report.line('refused', skill.name, `${target} changed here since the last pull (${change}); --force replaces it`);
    }
    if (sameSource && !change && sameDigests(locked!.files, remote)) return report.line('unchanged', skill.name);
  }
  let files: Map<string, Buffer>;
  try {
    files = await downloadSkill(connection.client, skill, progressFor(skill));
  } catch (error) {
    if (error instanceof DownloadRefused) return report.line('refused', skill.name, `${error.message}; nothing written`);
    throw error;
  }
  installSkill(dir, skill.name, files);
  lock.skills[skill.name] = { source, uri: skill.uri, via: skill.via, pulledAt: new Date().toISOString(), files: remote };
  writeLock(dir, lock);
  const bytes = [...files.values()].reduce((sum, b) => sum + b.length, 0);
  if (state.kind === 'folder' && locked) {
    const changed = Object.keys(remote).filter((p) => locked.files[p] !== remote[p]).length;
    const removed = Object.keys(locked.files).filter((p) => !(p in remote)).length;
    report.line('updated', skill.name, `${changed} of ${skill.files.length} files new or changed${removed ? `, ${removed} removed` : ''} -> ${target}`);
  } else {
    report.line('added', skill.name, `${skill.files.length} file${skill.files.length === 1 ? '' : 's'}, ${sizeText(bytes)} -> ${target}`);
  }
}

async function pull(args: PullArgs): Promise<number> {
  const dir = resolve(args.to);
  mkdirSync(dir, { recursive: true });
  const lock = readLock(dir);
  let connection: Connection;
  try {
    connection = await connect(args.source, args.headers);
  } catch (error) {
    process.stderr.write(`skill-mcp pull: could not connect to ${describeSource(args.source)}: ${errorText(error)}\n`);
    return 1;
  }
  const report = new Report();
  try {
    let found;
    try {
      found = await discover(connection.client, args.skills);
    } catch (error) {
      process.stderr.write(`skill-mcp pull: could not list the skills of ${describeSource(args.source)}: ${errorText(error)}\n`);
      return 1;
    }
    process.stderr.write(`pull: ${found.skills.length + found.refused.length} skill(s) from ${describeSource(args.source)} (${found.via}) into ${dir}\n`);
    for (const refusal of found.refused) report.line('refused', refusal.name, `${refusal.why}; nothing written`);
    for (const name of args.skills) {
      if (!found.skills.some((s) => s.name === name) && !found.refused.some((r) => r.name === name)) report.line('refused', name, 'the server does not publish a skill of that name');
    }
    for (const skill of [...found.skills].sort((a, b) => (a.name < b.name ? -1 : 1))) await pullOne(connection, args, dir, lock, skill, report);
    if (args.skills.size === 0) {
      const source = JSON.stringify(lockedSource(args.source));
      for (const [name, locked] of Object.entries(lock.skills)) {
        if (JSON.stringify(locked.source) !== source || found.skills.some((s) => s.name === name) || found.refused.some((r) => r.name === name)) continue;
        report.line('gone', name, `no longer published by this server; ${join(dir, name)} is left as it is`);
      }
    }
  } finally {
    await connection.close();
  }
  const t = report.tally;
  process.stdout.write(`pull: ${t.added} added, ${t.updated} updated, ${t.unchanged} unchanged, ${t.refused} refused\n`);
  return t.refused > 0 ? 1 : 0;
}

export async function pullMain(argv: string[]): Promise<void> {
  const parsed = parsePullArgs(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(`${PULL_USAGE}\n`);
    return;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`skill-mcp pull: ${parsed.message}\n${PULL_USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    process.exitCode = await pull(parsed.args);
  } catch (error) {
    if (!(error instanceof LockError)) throw error;
    process.stderr.write(`skill-mcp pull: ${error.message}\n`);
    process.exitCode = 1;
  }
}
