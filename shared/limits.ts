/**
 * @module Limits both processes agree on, with their units in their names. Owner-tunable ones are
 * read from `SKILL_MCP_*` variables by {@link readLimitSettings}; the rest are fixed by the spec.
 */
import { readVariable, wholeNumber, type SettingIssue } from './settings-schema.js';

/** Per-call and per-entry caps of `skill_file` (docs/architecture.md §1): bound the front's heap, not just the reply. */
export const MAX_PATHS_PER_CALL = 8;
export const MAX_ENTRY_BYTES = 1024 * 1024;
export const MAX_CALL_BYTES = 4 * 1024 * 1024;

/** A client-named path longer than this is refused before touching the disk. */
export const MAX_PATH_CHARS = 1024;
export const MAX_SEGMENT_BYTES = 255;

/** The extension's publication limits (SEP-2640): a skill above them is served by the tools only. */
export const PUBLISH_MAX_FILES = 512;
export const PUBLISH_MAX_BYTES = 16 * 1024 * 1024;
/**
 * Largest single file a published skill may hold. One `resources/read` carries a whole file in one
 * JSON-RPC message; base64 of 7 MiB stays under the 10 MiB message cap common stdio clients (the
 * SDK's own among them) enforce, so every published file can actually be read.
 */
export const PUBLISH_MAX_FILE_BYTES = 7 * 1024 * 1024;
/** A SKILL.md larger than this is not read at all (`unreadable-skill-md`), by either process. */
export const MAX_SKILL_MD_BYTES = 8 * 1024 * 1024;
/** `skill_load` and prompts carry at most this much of a SKILL.md body (beyond: `truncated`, or refused). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
export const MAX_DESCRIPTION_CHARS = 1024;
export const MAX_SKILL_NAME_CHARS = 64;

/** Script time budget (docs/architecture.md §8). */
export const DEFAULT_TIMEOUT_MS = 60_000;
export const MAX_TIMEOUT_MS = 300_000;
/**
 * The longest a data folder's turn is held (runner/data/folder-turn.ts, and in Redis
 * runner/data/shared-turns.ts): a run's timeout and its end (kill, drain, reap, walk) with room to spare.
 */
export const SHARED_TURN_MS = MAX_TIMEOUT_MS + 120_000;
/**
 * How long a run over the runner's limit waits for a slot before it is refused BUSY (default, and
 * the most an owner may set): the front waits this much longer than a run's own timeout.
 */
export const DEFAULT_RUN_QUEUE_MS = 10_000;
export const MAX_RUN_QUEUE_MS = 30_000;
/** Captured bytes per output stream before `truncated: true`. */
export const MAX_STREAM_BYTES = 1024 * 1024;

export interface CatalogLimits {
  maxSkills: number;
  maxFilesPerSkill: number;
  maxDirsPerSkill: number;
  maxFrontmatterBytes: number;
}

export const DEFAULT_CATALOG_LIMITS: Readonly<CatalogLimits> = Object.freeze({
  /**
   * What the benchmark shows one front serves well (bench/RESULTS.md, 5,000 skills / 50,000 files):
   * first skills/list in ~1.1 s, ~140 MB RSS, skill_search under 1 ms at the median, a watch of
   * ~24,000 folders. Beyond it start-up and memory grow linearly; raise it knowingly.
   */
  maxSkills: 5000,
  maxFilesPerSkill: 2000,
  maxDirsPerSkill: 2000,
  maxFrontmatterBytes: 64 * 1024,
});

const LIMIT_VARIABLES: Record<keyof CatalogLimits, string> = {
  maxSkills: 'SKILL_MCP_MAX_SKILLS',
  maxFilesPerSkill: 'SKILL_MCP_MAX_FILES',
  maxDirsPerSkill: 'SKILL_MCP_MAX_DIRS',
  maxFrontmatterBytes: 'SKILL_MCP_MAX_FRONTMATTER_BYTES',
};

/**
 * The owner's limits, read the same way by both processes (and `skill-mcp check`). A value that is
 * not a positive integer is a `default`-policy issue: reported loudly, the default kept — a typo
 * must not silently lift or zero a limit, nor stop a server over a tuning knob.
 */
export function readLimitSettings(env: Readonly<Record<string, string | undefined>>, issues: SettingIssue[]): CatalogLimits {
  const limits: CatalogLimits = { ...DEFAULT_CATALOG_LIMITS };
  for (const [key, name] of Object.entries(LIMIT_VARIABLES) as [keyof CatalogLimits, string][]) {
    limits[key] = readVariable(
      env,
      { name, schema: wholeNumber(1), expected: 'a positive integer', fallback: limits[key], policy: 'default' },
      issues,
    );
  }
  return limits;
}

/** {@link readLimitSettings}, with the issues as messages. */
export function readCatalogLimits(env: NodeJS.ProcessEnv): { limits: CatalogLimits; errors: string[] } {
  const issues: SettingIssue[] = [];
  const limits = readLimitSettings(env, issues);
  return { limits, errors: issues.map((issue) => issue.message) };
}
