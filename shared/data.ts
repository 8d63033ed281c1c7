/**
 * @module Data folders as both sides and the CLI name them (docs/isolation.md, "Data folders"):
 * which skills get one, with what quota, and where: `<base>/<skill>/<who>`. The base is the host's
 * `MCP_DATA_DIR` when set (then every granted skill gets a folder), else `data/` in the runner's
 * state folder (then only skills declaring `data:`). `who` is `anyone` for a caller without an
 * identity, else `s-` and a hash of the subject (shared/token.ts requesterTag): one person's folder
 * is never another's, and no subject is spelled out on disk.
 */
import { join } from 'node:path';
import type { DeclaredData } from './declaration.js';
import { requesterTag } from './token.js';

/** A data folder's quota: the most bytes and entries it may hold after a run. */
export interface DataQuota {
  bytes: number;
  files: number;
}

/** The operator's quota when a skill declares none (`SKILL_MCP_DATA_BYTES`, `SKILL_MCP_DATA_FILES`). */
export const DEFAULT_DATA_BYTES = 100 * 1024 * 1024;
export const DEFAULT_DATA_FILES = 10_000;

/** The folder of a caller without an identity. */
export const ANYONE = 'anyone';

/** Where data folders live: the host's `MCP_DATA_DIR`, else `data/` in the state folder. */
export function dataBaseOf(env: Readonly<Record<string, string | undefined>>, stateDir: string): string {
  return env['MCP_DATA_DIR'] || join(stateDir, 'data');
}

/** The folder's name below its skill's for `subject` (undefined: no identity). */
export function dataWho(subject: string | undefined): string {
  return subject === undefined ? ANYONE : `s-${requesterTag(subject)}`;
}

/**
 * The quota of a skill's folder, or undefined when it gets none: with the host's base every granted
 * skill gets one, standalone only a skill declaring `data:`. Security: the operator's figures are
 * also the most — a declaration may only lower them, as it may only lower the memory cap.
 */
export function dataQuota(declared: DeclaredData | undefined, hostBase: boolean, operator: DataQuota): DataQuota | undefined {
  if (declared === undefined && !hostBase) return undefined;
  return {
    bytes: Math.min(declared?.bytes ?? operator.bytes, operator.bytes),
    files: Math.min(declared?.files ?? operator.files, operator.files),
  };
}
