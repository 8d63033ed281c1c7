/**
 * @module What a data folder holds after a run (docs/isolation.md, "Data folders"), as its walk
 * measured it (measure.ts), and what the runner makes of that against the folder's quota.
 */

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
