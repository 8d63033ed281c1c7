/**
 * @module Measures a data folder (docs/isolation.md, "Data folders"): its bytes and entries, and
 * every entry that is neither a regular file nor a folder. Run once nothing of the run is left, by
 * the run's walk (runner/walker/walk.ts): as root in a walker process of the run's uid, otherwise in
 * the runner's process, which then holds no more than the run's uid. Names are read as bytes
 * (shared/byte-names.ts).
 */
import { lstatSync } from 'node:fs';
import { joinBytes, nameText, openDirBytes } from '../../shared/byte-names.js';
import type { DataUsage } from './usage.js';

const ODD_LISTED = 20;

/**
 * Measures `dir`, counting at most `maxEntries` entries. Security: lstat only — no link is
 * followed and no file is opened, so what a script leaves there (a link to another skill's folder,
 * a FIFO) is counted and named, never read.
 */
export function measureData(dir: string, maxEntries: number): DataUsage {
  const usage: DataUsage = { bytes: 0, entries: 0, odd: [] };
  const folders: Buffer[] = [Buffer.from(dir)];
  const top = folders[0]!.length + 1;
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    let names: ReturnType<typeof openDirBytes>;
    try {
      names = openDirBytes(folder);
    } catch (error) {
      usage.unmeasured = `a folder could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
      return usage;
    }
    try {
      for (let name = names.next(); name !== null; name = names.next()) {
        if (++usage.entries > maxEntries) {
          usage.unmeasured = `it holds more than ${maxEntries} entries`;
          return usage;
        }
        const path = joinBytes(folder, name);
        const st = lstatSync(path, { bigint: false });
        if (st.isDirectory()) folders.push(path);
        else if (st.isFile()) usage.bytes += st.size;
        else if (usage.odd.length < ODD_LISTED) usage.odd.push(nameText(path.subarray(top)));
      }
    } finally {
      names.close();
    }
  }
  return usage;
}

/** {@link measureData}, or why the folder could not be measured at all (a code, never a host path). */
export function measureDataOrSay(dir: string, maxEntries: number): DataUsage {
  try {
    return measureData(dir, maxEntries);
  } catch (error) {
    return { bytes: 0, entries: 0, odd: [], unmeasured: `it could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}
