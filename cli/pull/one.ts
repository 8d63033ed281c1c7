/**
 * @module The part of `skill-mcp pull` every source shares: one skill decided from the lock and the
 * folder, then fetched, checked and written (or refused, saying why), and the report lines.
 */
import { join } from 'node:path';
import type { GitSource, IndexSource, PullArgs } from './args.js';
import { FetchRefused, shownUrl } from './http-get.js';
import type { Source } from './connect.js';
import { DownloadRefused } from './download.js';
import { GitError, safeGitUrl } from './git.js';
import { prepareSkill, localChange, targetState, type Prepared } from './install.js';
import { LOCK_FILE, digestsOf, sameDigests, writeLock, type Lock, type LockSource } from './lock.js';
import type { RemoteSkill } from './remote.js';

/** A skill this large reports its progress on stderr. */
const PROGRESS_MIN_FILES = 50;
const PROGRESS_MIN_BYTES = 1024 * 1024;

/**
 * The source as the lock records it: a URL without credentials, query or fragment (they may hold
 * secrets; headers are never recorded), or the command line.
 */
export function lockedSource(source: Source | GitSource | IndexSource): LockSource {
  if ('git' in source) return { git: safeGitUrl(source.git), ref: source.ref ?? 'HEAD', path: source.path };
  if ('index' in source) return { index: shownUrl(new URL(source.index)) };
  if (!('url' in source)) return { command: [...source.command] };
  const url = new URL(source.url);
  return { url: `${url.origin}${url.pathname}` };
}

export function describeSource(source: Source | LockSource): string {
  if ('git' in source) return `${source.git} (${source.ref ?? 'HEAD'}${source.path ? `, ${source.path}` : ''})`;
  if ('index' in source) return source.index;
  return 'url' in source ? source.url : source.command.join(' ');
}

export function sizeText(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export interface Tally {
  added: number;
  updated: number;
  unchanged: number;
  refused: number;
}

export class Report {
  readonly tally: Tally = { added: 0, updated: 0, unchanged: 0, refused: 0 };
  /** Files of pulled skills that were not written (links, submodules, LFS pointers, dot-files). */
  skippedFiles = 0;
  line(kind: keyof Tally | 'gone' | 'skipped' | 'nested', name: string, text?: string): void {
    if (kind === 'skipped') this.skippedFiles++;
    else if (kind !== 'gone' && kind !== 'nested') this.tally[kind]++;
    process.stdout.write(`${kind.padEnd(9)} ${name}${text ? `: ${text}` : ''}\n`);
  }
}

/** Reports a big skill's download at each quarter, on stderr. */
export function progressFor(skill: RemoteSkill): ((done: number, total: number, bytes: number) => void) | undefined {
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

/** Where one skill's checked bytes come from: an MCP server's reads, or a fetched commit. */
export type FetchFiles = (skill: RemoteSkill, progress: ReturnType<typeof progressFor>) => Promise<Map<string, Buffer>>;

/** What the lock pins a skill to besides its files: the commit (git) or the index's digest. */
export interface Pin {
  commit?: string;
  digest?: string;
}

/** A skill written beside the folder and checked, waiting for the whole pull to succeed (an index pull). */
export interface Deferred {
  name: string;
  prepared: Prepared;
  /** Records it in the lock and reports it, once it is in place. */
  finish(): void;
}

/**
 * One skill: decide from the lock and the folder, then download, check and write it (or say why
 * not). With `deferred`, the checked copy is prepared beside the folder and left for the caller to
 * put in place (or discard) with the others.
 */
export async function pullOne(
  fetchFiles: FetchFiles,
  args: PullArgs,
  dir: string,
  lock: Lock,
  skill: RemoteSkill,
  report: Report,
  pin: Pin = {},
  deferred?: Deferred[],
): Promise<void> {
  const target = join(dir, skill.name);
  const state = targetState(dir, skill.name);
  if (state.kind === 'refused') return report.line('refused', skill.name, `${state.why}; nothing written`);
  const source = lockedSource(args.source);
  const locked = lock.skills[skill.name];
  const remote = digestsOf(skill.files);
  const sameSource = locked !== undefined && JSON.stringify(locked.source) === JSON.stringify(source);
  if (state.kind === 'folder') {
    const change = locked ? localChange(target, locked) : undefined;
    if (!args.force) {
      if (!locked)
        return report.line(
          'refused',
          skill.name,
          `${target} exists and was not written by pull (${LOCK_FILE} has no entry for it); --force replaces it`,
        );
      if (!sameSource)
        return report.line(
          'refused',
          skill.name,
          `${target} was pulled from ${describeSource(locked.source)}; --force replaces it with the copy from here`,
        );
      if (change) return report.line('refused', skill.name, `${target} changed here since the last pull (${change}); --force replaces it`);
    }
    if (sameSource && !change && sameDigests(locked!.files, remote)) {
      if ((pin.commit !== undefined && locked!.commit !== pin.commit) || (pin.digest !== undefined && locked!.digest !== pin.digest)) {
        lock.skills[skill.name] = { ...locked!, ...pin };
        writeLock(dir, lock);
      }
      return report.line('unchanged', skill.name);
    }
  }
  let files: Map<string, Buffer>;
  try {
    files = await fetchFiles(skill, progressFor(skill));
  } catch (error) {
    if (error instanceof DownloadRefused || error instanceof GitError || error instanceof FetchRefused)
      return report.line('refused', skill.name, `${error.message}; nothing written`);
    throw error;
  }
  const finish = (): void => {
    lock.skills[skill.name] = { source, uri: skill.uri, via: skill.via, ...pin, pulledAt: new Date().toISOString(), files: remote };
    writeLock(dir, lock);
    const bytes = [...files.values()].reduce((sum, b) => sum + b.length, 0);
    if (state.kind === 'folder' && locked) {
      const changed = Object.keys(remote).filter((p) => locked.files[p] !== remote[p]).length;
      const removed = Object.keys(locked.files).filter((p) => !(p in remote)).length;
      report.line(
        'updated',
        skill.name,
        `${changed} of ${skill.files.length} files new or changed${removed ? `, ${removed} removed` : ''} -> ${target}`,
      );
    } else {
      report.line('added', skill.name, `${skill.files.length} file${skill.files.length === 1 ? '' : 's'}, ${sizeText(bytes)} -> ${target}`);
    }
  };
  const prepared = prepareSkill(dir, skill.name, files);
  if (deferred) return void deferred.push({ name: skill.name, prepared, finish });
  prepared.commit();
  finish();
}

export function summary(report: Report): number {
  const t = report.tally;
  const files = report.skippedFiles > 0 ? `, ${report.skippedFiles} file${report.skippedFiles === 1 ? '' : 's'} not pulled` : '';
  process.stdout.write(`pull: ${t.added} added, ${t.updated} updated, ${t.unchanged} unchanged, ${t.refused} refused${files}\n`);
  return t.refused > 0 || report.skippedFiles > 0 ? 1 : 0;
}
