/**
 * @module The folders a local (`file://`) package index links to, so the install sandbox can see
 * them (docs/isolation.md, "Dependency environments"). A local pip mirror usually keeps its pages
 * and its files apart — `simple/<project>/index.html` linking to `../../files/<wheel>` — and a
 * sandbox that binds only the index folder hands pip pages whose every link is missing. So every
 * project page is read once, before the install, and each folder outside the index that its links
 * reach is bound read-only too.
 *
 * Which folder: the first one below the deepest folder the index and the linked file share
 * (`/srv/pypi/simple` and `/srv/pypi/files/ab/x.whl` → `/srv/pypi/files`), so a mirror that spreads
 * its files over hash folders is one bind; a link that shares nothing but `/` with the index binds
 * its own folder. Bounded: at most {@link MAX_PAGES} pages and {@link MAX_LINKED_FOLDERS} folders,
 * else the install stops and says what to do, never a silent half view.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, constants } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Project pages read at most (a local mirror of a few thousand projects is well under). */
export const MAX_PAGES = 20_000;
/** One page at most (PyPI's largest project pages are a few MiB). */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;
/** Distinct folders outside the index its links may reach. */
export const MAX_LINKED_FOLDERS = 32;

/** What the scan reads; injected by the tests. */
export interface IndexReader {
  /** The names in a folder (only folders matter; anything else may be listed too). */
  list(dir: string): string[];
  /** A page's text; `tooLarge` with its size when over `max` bytes; undefined when there is none (missing, not a file). */
  page(path: string, max: number): string | { tooLarge: number } | undefined;
}

export type LinkedFolders = { ok: true; folders: string[]; pages: number } | { ok: false; why: string };

/** Every href of an HTML page (double-, single- or un-quoted), entities `&amp;` undone. */
export function hrefsOf(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi))
    out.push((m[1] ?? m[2] ?? m[3] ?? '').replace(/&amp;/g, '&'));
  return out;
}

/** The folder to bind for a file the index links to (see the module note), or undefined when it is inside the index. */
export function folderToBind(indexDir: string, file: string): string | undefined {
  const rel = relative(indexDir, file);
  if (rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep))) return undefined;
  let shared = indexDir;
  while (shared !== dirname(shared) && relative(shared, file).startsWith('..')) shared = dirname(shared);
  if (shared === dirname(shared)) return dirname(file);
  const first = relative(shared, file).split(sep)[0]!;
  const below = join(shared, first);
  return below === file ? dirname(file) : below;
}

/**
 * The folders outside `indexDir` that its project pages (`<indexDir>/<project>/index.html`, what
 * pip reads of a `file://` index) link to, sorted; or why they cannot all be found. `variable`
 * names the setting the index came from, for the message.
 */
export function linkedFolders(indexDir: string, variable: string, reader: IndexReader = fsReader): LinkedFolders {
  const folders = new Set<string>();
  let pages = 0;
  let names: string[];
  try {
    names = reader.list(indexDir);
  } catch (error) {
    return {
      ok: false,
      why: `the index folder ${indexDir} (${variable}) cannot be listed (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  for (const name of names.sort()) {
    const path = join(indexDir, name, 'index.html');
    const text = reader.page(path, MAX_PAGE_BYTES);
    if (text === undefined) continue;
    if (typeof text !== 'string')
      return {
        ok: false,
        why: `the index page ${path} (${variable}) is ${text.tooLarge} bytes, over the ${MAX_PAGE_BYTES}-byte limit of a page read to find the folders it links to`,
      };
    pages += 1;
    if (pages > MAX_PAGES)
      return {
        ok: false,
        why: `the index folder ${indexDir} (${variable}) has more than ${MAX_PAGES} project pages, too many to find every folder they link to; serve it over http on this machine (e.g. python3 -m http.server --bind 127.0.0.1 in its parent, then ${variable}=http://127.0.0.1:PORT/...), which the install reaches through its proxy`,
      };
    const base = pathToFileURL(path);
    for (const href of hrefsOf(text)) {
      let url: URL;
      try {
        url = new URL(href, base);
      } catch {
        continue;
      }
      if (url.protocol !== 'file:') continue;
      url.hash = '';
      url.search = '';
      const folder = folderToBind(indexDir, fileURLToPath(url));
      if (folder === undefined || folders.has(folder)) continue;
      folders.add(folder);
      if (folders.size > MAX_LINKED_FOLDERS)
        return {
          ok: false,
          why: `the pages of the index ${indexDir} (${variable}) link to files in more than ${MAX_LINKED_FOLDERS} folders outside it (${[...folders].slice(0, 3).join(', ')}, ...); keep the files in a few folders beside the index (as simple/ and files/), or serve it over http on this machine`,
        };
    }
  }
  return { ok: true, folders: [...folders].sort(), pages };
}

const fsReader: IndexReader = {
  list: (dir) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name),
  page(path, max) {
    let fd: number | undefined;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
      const st = fstatSync(fd);
      if (!st.isFile()) return undefined;
      if (st.size > max) return { tooLarge: st.size };
      const bytes = Buffer.alloc(st.size);
      let got = 0;
      while (got < bytes.length) {
        const n = readSync(fd, bytes, got, bytes.length - got, got);
        if (n === 0) break;
        got += n;
      }
      return bytes.subarray(0, got).toString('utf8');
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  },
};
