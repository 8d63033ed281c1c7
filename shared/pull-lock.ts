/**
 * @module The shape of `DIR/.skill-mcp-lock.json`, the lockfile `skill-mcp pull` writes beside the
 * skills it pulled: for each skill, where it came from, the commit or index digest it was pinned
 * to, and the digest of every file. Here because both sides read it: pull (cli/pull/lock.ts)
 * writes and compares it, the server shows each pulled skill's origin (server/catalog/provenance.ts).
 * Pure.
 */
import { z } from 'zod';

export const LOCK_FILE = '.skill-mcp-lock.json';
/** `sha256:` and 64 lowercase hex digits, the only digest form SEP-2640, FastMCP and the discovery index publish. */
export const DIGEST = /^sha256:[0-9a-f]{64}$/;

const SourceSchema = z.union([
  z.strictObject({ url: z.string() }),
  z.strictObject({ command: z.array(z.string()).min(1) }),
  z.strictObject({ git: z.string(), ref: z.string(), path: z.string() }),
  /** A well-known discovery index, by the URL of its index.json (no credentials, query or fragment). */
  z.strictObject({ index: z.string() }),
]);

export type LockSource = z.infer<typeof SourceSchema>;

const LockedSkillSchema = z.strictObject({
  source: SourceSchema,
  uri: z.string(),
  via: z.enum(['skills-extension', 'fastmcp-manifest', 'git', 'well-known-index']),
  /** For a git source: the commit the files came from. */
  commit: z
    .string()
    .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/)
    .optional(),
  /** For an index source: the digest the index published for the skill (its artifact's, or the skill-level digest). */
  digest: z.string().regex(DIGEST).optional(),
  pulledAt: z.string(),
  files: z.record(z.string(), z.string().regex(DIGEST)),
});

export const LockSchema = z.strictObject({
  lockfileVersion: z.literal(1),
  skills: z.record(z.string(), LockedSkillSchema),
});

export type LockedSkill = z.infer<typeof LockedSkillSchema>;
export type Lock = z.infer<typeof LockSchema>;
