/**
 * @module Reading declaration files (a skill's `mcp-host.yaml`, the operator's
 * `SKILL_MCP_DECLARATIONS/<skill>.yaml`) the one way both processes accept, and what the operator's
 * folder holds: its entries for `skill_list`'s problems and a digest of its contents for the
 * front↔runner agreement (shared/config-view.ts). A bad file is a reason for a problem, never a
 * throw: nothing read here can stop a process.
 */
import { readBounded } from './bounded-read.js';
import { closeSync, constants, lstatSync, openSync, opendirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** A declaration is a few dozen lines; this bounds what a hostile file can make either process hold. */
export const MAX_DECLARATION_FILE_BYTES = 64 * 1024;
/** Entries of the operator's folder looked at; the rest are reported, not read. */
export const MAX_DECLARATION_ENTRIES = 10_000;

export type FileRead = { kind: 'absent' } | { kind: 'text'; text: string } | { kind: 'bad'; why: string };

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The text of the declaration file at `path` (its name shown as `shown`), or why it cannot be one.
 * Security: O_NOFOLLOW, a link is never followed (out of the skill, or out of the operator's
 * folder); O_NONBLOCK, a FIFO cannot hang the synchronous open; the size is checked on what was
 * opened and the read stops one byte past the cap, so a file that grows while read cannot blow it.
 */
export function readDeclarationFile(path: string, shown: string): FileRead {
  // Most skills have no mcp-host.yaml: a failed open costs an exception (~5 µs, and garbage) per
  // skill per scan, a stat that finds nothing does not. Whatever is there is opened as below.
  try {
    if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return { kind: 'absent' };
  } catch {
    // ENAMETOOLONG, EACCES, ...: the open below says what it is.
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENAMETOOLONG') return { kind: 'absent' };
    if (code === 'ELOOP')
      return { kind: 'bad', why: `${shown} is a link; declarations are never read through links (put the file itself there)` };
    return { kind: 'bad', why: `${shown} cannot be opened (${code ?? 'error'})` };
  }
  try {
    const read = readBounded(fd, MAX_DECLARATION_FILE_BYTES);
    if (!read.ok && read.why === 'not-a-file') return { kind: 'bad', why: `${shown} is not a regular file` };
    if (!read.ok)
      return {
        kind: 'bad',
        why: `${shown} is ${read.stat.size} bytes, over the ${MAX_DECLARATION_FILE_BYTES}-byte limit for a declaration`,
      };
    try {
      return { kind: 'text', text: UTF8.decode(read.bytes) };
    } catch {
      return { kind: 'bad', why: `${shown} is not valid UTF-8` };
    }
  } catch (error) {
    return { kind: 'bad', why: `${shown} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
  }
}

/** Why the operator's folder cannot be used, or undefined when it is a folder. */
export function declarationsDirUnusable(dir: string): string | undefined {
  try {
    return statSync(dir).isDirectory() ? undefined : 'is not a folder';
  } catch (error) {
    return `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
}

export interface DirEntries {
  names: string[];
  /** More entries than {@link MAX_DECLARATION_ENTRIES}: the rest were not looked at. */
  limited: boolean;
  error?: string;
}

/** The entry names of the operator's folder, sorted by their UTF-8 bytes, at most {@link MAX_DECLARATION_ENTRIES}. */
export function listDeclarationsDir(dir: string): DirEntries {
  const names: string[] = [];
  let limited = false;
  try {
    const handle = opendirSync(dir);
    try {
      for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
        if (names.length >= MAX_DECLARATION_ENTRIES) {
          limited = true;
          break;
        }
        names.push(entry.name);
      }
    } finally {
      handle.closeSync();
    }
  } catch (error) {
    return { names: [], limited: false, error: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  names.sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
  return { names, limited };
}

/** The skill an entry of the operator's folder declares (`<skill>.yaml`), or undefined when it names none. */
export function skillOfEntry(name: string): string | undefined {
  return name.endsWith('.yaml') && name.length > '.yaml'.length ? name.slice(0, -'.yaml'.length) : undefined;
}

/**
 * sha256 over what the operator's folder holds: per entry (sorted) its name and the sha256 of its
 * bytes, or what kind of thing it is when it is not a readable regular file within the cap. Two
 * processes that read the same declarations get the same digest wherever the folder is mounted.
 */
export function declarationsDigest(dir: string | undefined): string {
  const hash = createHash('sha256');
  if (dir === undefined) return hash.update('none\n').digest('hex');
  const listed = listDeclarationsDir(dir);
  if (listed.error !== undefined) return hash.update(`unreadable ${listed.error}\n`).digest('hex');
  for (const name of listed.names) {
    const read = readDeclarationFile(join(dir, name), name);
    let what: string;
    if (read.kind === 'text') what = createHash('sha256').update(read.text, 'utf8').digest('hex');
    else {
      const info = lstatSync(join(dir, name), { throwIfNoEntry: false });
      what = `${info?.isSymbolicLink() ? 'link' : info?.isDirectory() ? 'folder' : info?.isFile() ? `file ${info.size}` : 'special'}`;
    }
    hash.update(`${JSON.stringify(name)} ${what}\n`, 'utf8');
  }
  if (listed.limited) hash.update('limited\n');
  return hash.digest('hex');
}
