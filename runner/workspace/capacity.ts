/**
 * @module How much a run's workspace may hold (docs/architecture.md §8, "A run's workspace", and
 * docs/isolation.md, "The workspace's size"): `SKILL_MCP_RUN_WORKSPACE_BYTES` of real usage (blocks
 * on the disk or pages of RAM, not the apparent size of a sparse file) and
 * `SKILL_MCP_RUN_WORKSPACE_FILES` entries (files, folders, links — every name). The input files
 * count against both. Pure: numbers in, a verdict or a sentence out.
 *
 * How the cap is kept depends on the runner: as root a size-limited tmpfs is mounted on the
 * workspace (runner/workspace/mount.ts), so the kernel refuses the write past it (ENOSPC) — exact;
 * otherwise a watcher (runner/workspace/watch.ts) measures the workspace every
 * {@link WATCH_INTERVAL_MS} and stops the run once it is over — approximate, by what the run can
 * write between two looks.
 */

export const DEFAULT_WORKSPACE_BYTES = 256 * 1024 * 1024;
export const DEFAULT_WORKSPACE_FILES = 10_000;
/** The watcher walks up to this many entries per look; more would make one look too slow to bound anything. */
export const MAX_WORKSPACE_FILES = 100_000;
/** How often the workspace is looked at while the run lasts. */
export const WATCH_INTERVAL_MS = 100;
/** What one file of the inputs takes at least: a page on tmpfs, a block on the usual disks. */
export const PAGE_BYTES = 4096;

export interface WorkspaceCap {
  bytes: number;
  files: number;
}

/** How a runner keeps the cap: the kernel (a tmpfs of that size), or its own watcher. */
export type WorkspaceMode = 'tmpfs' | 'watch';

/** Which cap a workspace went past (or reached, on tmpfs), or that it could not be measured. */
export type WorkspaceOver = 'bytes' | 'files' | 'unmeasurable';

/** What a look at the workspace found. */
export interface WorkspaceUsage {
  bytes: number;
  files: number;
  /** Set when the workspace is over a cap (or, on tmpfs, at it); `why` says what was seen. */
  over?: WorkspaceOver;
  why?: string;
}

/**
 * What the inputs take in the workspace, counted as the cap counts: each file rounded up to whole
 * pages, and one entry per file and per folder the paths make. The paths were checked before
 * (shared/run-io.ts), so splitting on `/` gives their real segments.
 */
export function inputsFootprint(paths: readonly string[], sizes: readonly number[]): WorkspaceUsage {
  const folders = new Set<string>();
  for (const path of paths) {
    const segments = path.split('/');
    for (let i = 1; i < segments.length; i += 1) folders.add(segments.slice(0, i).join('/'));
  }
  const bytes = sizes.reduce((n, size) => n + Math.ceil(size / PAGE_BYTES) * PAGE_BYTES, 0);
  return { bytes, files: paths.length + folders.size };
}

/** Why inputs this large are refused before anything runs (they would fill the workspace themselves), or undefined. */
export function inputsCapProblem(paths: readonly string[], sizes: readonly number[], cap: WorkspaceCap): string | undefined {
  const use = inputsFootprint(paths, sizes);
  if (use.bytes > cap.bytes)
    return `the input files take ${use.bytes} bytes in the workspace (each rounded up to ${PAGE_BYTES}-byte pages), more than the ${cap.bytes} a run's workspace holds (SKILL_MCP_RUN_WORKSPACE_BYTES); nothing was run`;
  if (use.files > cap.files)
    return `the input files make ${use.files} entries in the workspace (files and folders), more than the ${cap.files} a run's workspace holds (SKILL_MCP_RUN_WORKSPACE_FILES); nothing was run`;
  return undefined;
}

/**
 * The sentence a result carries when the workspace filled, for the person and the model: which
 * cap, how it was kept, and what the script saw.
 */
export function workspaceFullNote(
  over: WorkspaceOver,
  mode: WorkspaceMode,
  cap: WorkspaceCap,
  why: string | undefined,
  stopped: boolean,
): string {
  const what =
    over === 'bytes'
      ? `its cap of ${cap.bytes} bytes (SKILL_MCP_RUN_WORKSPACE_BYTES)`
      : over === 'files'
        ? `its cap of ${cap.files} files and folders (SKILL_MCP_RUN_WORKSPACE_FILES)`
        : 'what the runner can measure';
  if (mode === 'tmpfs')
    return `the workspace filled up: it reached ${what}, and writes past it failed with "No space left on device" (ENOSPC)${why ? ` (${why})` : ''}; outputs may be incomplete`;
  return `${stopped ? 'the run was stopped: ' : ''}its workspace went past ${what}${why ? ` (${why})` : ''}${stopped ? '' : ' by the end of the run'}; outputs may be incomplete`;
}
