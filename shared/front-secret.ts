/**
 * @module The front secret of a hosted pair, read from a file by both processes (the runner's
 * `--front-secret-file`, the front's `SKILL_MCP_FRONT_SECRET_FILE`), and the shape every front
 * secret must have. Why a runner needs one: runner/requests/front-auth.ts and SECURITY.md.
 */
import { readFileSync, statSync } from 'node:fs';
import { SkillMcpError } from './errors.js';
import { MAX_FRONT_SECRET_CHARS } from './protocol.js';

const MIN_SECRET_CHARS = 32;

/** A secret read from a file or a pipe: 32 to 1024 visible characters, one line. */
export function parseFrontSecret(raw: string, from: string): string {
  const secret = raw.replace(/\r?\n$/, '');
  if (secret.length < MIN_SECRET_CHARS || secret.length > MAX_FRONT_SECRET_CHARS || !/^[\x21-\x7e]+$/.test(secret)) {
    throw new SkillMcpError(
      'BAD_REQUEST',
      `the front secret from ${from} must be one line of ${MIN_SECRET_CHARS} to ${MAX_FRONT_SECRET_CHARS} visible characters (for example \`openssl rand -hex 32\`)`,
    );
  }
  return secret;
}

/** Reads an operator's secret file (the front reads the same file). */
export function readFrontSecretFile(path: string): string {
  // Security: a secret any local user can read authenticates nobody.
  if ((statSync(path).mode & 0o004) !== 0) {
    throw new SkillMcpError(
      'BAD_REQUEST',
      `the front secret file ${path} is readable by every user; make it 0640 (root and the front's group) or 0600`,
    );
  }
  return parseFrontSecret(readFileSync(path, 'utf8'), path);
}
