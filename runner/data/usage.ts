/**
 * @module What a data folder holds (docs/isolation.md, "Data folders"): its bytes and entries, and
 * every entry that is neither a regular file nor a folder. Run once nothing of the run is left: as
 * root in the run's outputs walker (runner/walker/main.ts, the run's uid), otherwise by the runner,
 * which then holds no more than the run's uid. Names are read as bytes (shared/byte-names.ts).
 */
import { lstatSync } from 'node:fs';
import { joinBytes, nameText, openDirBytes } from '../../shared/byte-names.js';

export interface DataUsage {
  /** The sizes of its regular files, summed (a sparse file counts its whole size; the entry quota bounds the rest). */
  bytes: number;
  /** Entries below the folder: files, folders and everything else. */
  entries: number;
  /** Links, FIFOs, sockets and devices found (never followed or opened), the first few by name. */
  odd: string[];
  /** Why it could not be measured whole (a folder it could not read, or the entry bound passed). */
  unmeasured?: string;
}

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

/** What a run's result and its next run make of a measurement: over the quota (or not measured whole) is full. */
export function dataVerdict(usage: DataUsage | undefined, quota: { bytes: number; files: number }): { full: boolean; note?: string } {
  const links =
    usage !== undefined && usage.odd.length > 0 ? ` It also holds links, FIFOs or devices, never followed: ${usage.odd.join(', ')}.` : '';
  // Security: a folder that cannot be measured is treated as full — never a quota silently unkept.
  if (usage === undefined || usage.unmeasured !== undefined)
    return {
      full: true,
      note: `the skill's data folder could not be measured after this run (${usage?.unmeasured ?? 'no walk'}), so further runs are refused (DATA_FULL) until it is checked (skill-mcp data du) or emptied.${links}`,
    };
  if (usage.bytes > quota.bytes || usage.entries > quota.files)
    return {
      full: true,
      note: `the skill's data folder holds ${usage.bytes} bytes in ${usage.entries} entries, over its quota of ${quota.bytes} bytes and ${quota.files} entries. What was written is kept; further runs are refused (DATA_FULL) until space is freed.${links}`,
    };
  return links !== '' ? { full: false, note: links.trim() } : { full: false };
}
