/**
 * @module Catalog problems (docs/architecture.md §3): anything that keeps a directory, file or script from being
 * served is reported as `{path, reason, detail}`. `reason` is stable for code; `detail` is for
 * people. The set grows without a major version: clients treat unknown reasons as generic.
 */

export const PROBLEM_REASONS = [
  'root-unreadable',
  'no-skill-md',
  'unreadable-skill-md',
  'malformed-frontmatter',
  'declaration',
  'duplicate-name',
  'name-mismatch',
  'unusable-name',
  'declared-script-missing',
  'symlink-escape',
  'unusable-path',
  'file-limit',
  'skill-limit',
  'grant',
  'environ-unscrubbed',
  'config-mismatch',
  'content-mismatch',
  'not-published',
  'config',
] as const;

export type ProblemReason = (typeof PROBLEM_REASONS)[number];

export interface Problem {
  /** Where, relative to a root's folder name (never an absolute host path). */
  path: string;
  reason: ProblemReason;
  detail: string;
}
