/**
 * @module One confirmation secret, one key per purpose (docs/architecture.md §7). An owner who wants
 * several runners (and fronts) to agree gives them one secret; each process derives from it, with
 * HKDF-SHA256 and a label per purpose, only the key it needs:
 *
 *   - the runner: the token key (`confirm-token`), which mints and verifies `confirmToken`s;
 *   - the front: the `requestState` key (`request-state`), which seals a 2026-07-28 elicitation round.
 *
 * HKDF is one-way and the labels differ, so a front holding its key — even a compromised one —
 * learns nothing that mints a token; the front drops the secret itself once it has derived its key.
 * The secret comes from `MCP_CONFIRM_SECRET_FILE` (a file only the runner's user can read: the front
 * then never sees it) or `MCP_CONFIRM_SECRET`.
 */
import { hkdfSync } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { SkillMcpError } from './errors.js';

export type KeyPurpose = 'confirm-token' | 'request-state';

const LABELS: Record<KeyPurpose, string> = {
  'confirm-token': 'skill-mcp confirm-token key v2',
  'request-state': 'skill-mcp request-state key v2',
};
const SALT = 'skill-mcp confirm secret';
export const DERIVED_KEY_BYTES = 32;

/** The key for `purpose` derived from `secret`. */
export function deriveKey(secret: string, purpose: KeyPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), SALT, LABELS[purpose], DERIVED_KEY_BYTES));
}

export type ConfirmSecret = { secret: string; from: 'file' | 'env' } | { from: 'none' };

/**
 * The owner's confirmation secret: the file wins over the variable. Throws (a malformed security
 * setting stops the process) when the file is world-readable, empty or unreadable — unless
 * `unreadableIsNone`, for a front that may simply not be allowed to read the runner's file.
 */
export function readConfirmSecret(env: NodeJS.ProcessEnv, unreadableIsNone = false): ConfirmSecret {
  const file = env['MCP_CONFIRM_SECRET_FILE'];
  if (file !== undefined && file !== '') {
    let text: string;
    try {
      // Security: a secret every local user can read lets every local user mint tokens.
      if ((statSync(file).mode & 0o004) !== 0)
        throw new SkillMcpError(
          'BAD_REQUEST',
          `MCP_CONFIRM_SECRET_FILE ${file} is readable by every user; make it 0600 (the runner's user only)`,
        );
      text = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      if (unreadableIsNone && (error as NodeJS.ErrnoException).code === 'EACCES') return { from: 'none' };
      if (error instanceof SkillMcpError) throw error;
      throw new SkillMcpError(
        'BAD_REQUEST',
        `MCP_CONFIRM_SECRET_FILE ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        { cause: error },
      );
    }
    if (text === '')
      throw new SkillMcpError(
        'BAD_REQUEST',
        `MCP_CONFIRM_SECRET_FILE ${file} is empty; put a long random line in it (openssl rand -hex 32)`,
      );
    return { secret: text, from: 'file' };
  }
  const value = env['MCP_CONFIRM_SECRET'];
  return value !== undefined && value !== '' ? { secret: value, from: 'env' } : { from: 'none' };
}
