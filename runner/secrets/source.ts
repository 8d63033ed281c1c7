/**
 * @module Where a secret's value comes from (docs/secrets.md, "Values"), read by the runner alone,
 * at every prepare and again at every run:
 *
 * - a caller without a verified identity (standalone, a static bearer token): the operator's value —
 *   `SKILL_MCP_SECRET_<NAME>` in the runner's private copy of its environment, else the file
 *   `SKILL_MCP_SECRETS_DIR/<NAME>`;
 * - a verified identity (hosted with OAuth): `SKILL_MCP_SECRETS_DIR/<subject>/<NAME>`, the subject
 *   encoded into one folder name ({@link subjectFolder}); the operator's value only for names the
 *   operator lists in `SKILL_MCP_SECRETS_SHARED`.
 *
 * Every refusal says which source was looked at (by variable name, never a host path) and why — and
 * never the value. A value is one line of visible ASCII, 8 to 8192 bytes ({@link checkSecretValue}).
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { perComponentOpener } from '../../shared/open-beneath.js';
import { readVariable, type VariableSpec } from '../../shared/settings-schema.js';

/** The runner's variable holding the operator's value of secret NAME. */
export const SECRET_VARIABLE_PREFIX = 'SKILL_MCP_SECRET_';

/** `SKILL_MCP_SECRETS_DIR`: the folder of values (one file per secret; per subject, one folder each). */
export const SECRETS_DIR: VariableSpec<string | undefined> = {
  name: 'SKILL_MCP_SECRETS_DIR',
  schema: z
    .string()
    .refine((path) => isAbsolute(path) && !path.includes('\0'))
    .transform((path) => resolve(path)),
  expected: 'an absolute path to a folder of secret values (<NAME> files, or <subject>/<NAME> per person)',
  fallback: undefined,
  policy: 'stop',
};

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** `SKILL_MCP_SECRETS_SHARED`: the secrets whose operator value a verified identity without its own may use. */
export const SECRETS_SHARED: VariableSpec<string[]> = {
  name: 'SKILL_MCP_SECRETS_SHARED',
  schema: z
    .string()
    .transform((raw) =>
      raw
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== ''),
    )
    .refine((names) => names.every((name) => NAME.test(name))),
  expected: 'a comma-separated list of secret names (NAME,OTHER_NAME)',
  fallback: [],
  policy: 'stop',
};

/** Shorter values would make redaction (searching everything a run returns for them) useless. */
export const MIN_SECRET_BYTES = 8;
export const MAX_SECRET_BYTES = 8192;

export type SecretValue = { ok: true; value: string } | { ok: false; why: string };

/**
 * The value in `raw`: one trailing newline (LF or CRLF) stripped, then one line of visible ASCII
 * of 8 to 8192 bytes. Security: what goes into a header cannot hold a CR or LF (a header or request
 * of its own) or a space; the reason never repeats the value.
 */
export function checkSecretValue(raw: Buffer): SecretValue {
  let end = raw.length;
  if (end > 0 && raw[end - 1] === 0x0a) end -= raw[end - 2] === 0x0d ? 2 : 1;
  const bytes = raw.subarray(0, end);
  if (bytes.length < MIN_SECRET_BYTES)
    return { ok: false, why: `the value is ${bytes.length} bytes, shorter than the ${MIN_SECRET_BYTES} a secret needs` };
  if (bytes.length > MAX_SECRET_BYTES) return { ok: false, why: `the value is over ${MAX_SECRET_BYTES} bytes` };
  for (const byte of bytes) {
    if (byte < 0x21 || byte > 0x7e)
      return {
        ok: false,
        why:
          byte === 0x0a || byte === 0x0d
            ? 'the value holds more than one line'
            : 'the value holds a character that is not visible ASCII (a space, tab, control character or non-ASCII byte)',
      };
  }
  return { ok: true, value: bytes.toString('latin1') };
}

/** Folder-name bytes kept as they are; every other byte is written %XX. */
const KEPT = /^[A-Za-z0-9._@+-]$/;
/** Linux NAME_MAX. */
const MAX_FOLDER_BYTES = 255;

/**
 * The one folder name a subject's values live in, or undefined when its encoding is longer than a
 * folder name may be. Each UTF-8 byte outside `A-Z a-z 0-9 . _ @ + -` becomes `%` and two upper-case
 * hex digits (`%` itself too), and a leading `.` becomes `%2E`. Security: the result is never `.`,
 * `..` or empty and holds no `/` or NUL, so it names one folder directly below the secrets folder;
 * and two subjects never share one (the encoding is reversible).
 */
export function subjectFolder(subject: string): string | undefined {
  let out = '';
  for (const byte of Buffer.from(subject, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += byte < 0x80 && KEPT.test(char) && !(out === '' && char === '.') ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out !== '' && out.length <= MAX_FOLDER_BYTES ? out : undefined;
}

type FileValue = SecretValue | { ok: 'absent' };

/**
 * The value in the file `segments` below `dir`. Security: no link is followed on the way or at the
 * end (O_NOFOLLOW per component, shared/open-beneath.ts); what is opened must be a regular file with
 * one link, owned by the runner's effective uid, with no group or other permission bits — a value
 * someone else could write (or has a second name for) is refused, not used.
 */
function readValueFile(dir: string, segments: readonly string[], shown: string): FileValue {
  let root: number;
  try {
    root = perComponentOpener.openRoot(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? { ok: 'absent' }
      : { ok: false, why: `SKILL_MCP_SECRETS_DIR cannot be opened as a folder (${code ?? 'error'}; it may not be a link)` };
  }
  let fd: number | undefined;
  try {
    fd = perComponentOpener.open(root, segments);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: 'absent' };
    if (code === 'ELOOP' || code === 'ENOTDIR')
      return { ok: false, why: `${shown} is (or lies below) a link or not a folder; values are never read through links` };
    return { ok: false, why: `${shown} cannot be opened (${code ?? 'error'})` };
  } finally {
    if (fd === undefined) closeSync(root);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { ok: false, why: `${shown} is not a regular file` };
    if (info.uid !== process.geteuid!())
      return {
        ok: false,
        why: `${shown} is owned by uid ${info.uid}, not by the runner's user (uid ${process.geteuid!()}); chown it to the runner's user`,
      };
    if ((info.mode & 0o077) !== 0)
      return {
        ok: false,
        why: `${shown} has mode ${(info.mode & 0o777).toString(8).padStart(4, '0')}; a secret file must be readable by its owner only (chmod 600)`,
      };
    if (info.nlink !== 1) return { ok: false, why: `${shown} has ${info.nlink} hard links; a secret file must have one name only` };
    if (info.size > MAX_SECRET_BYTES + 2) return { ok: false, why: `${shown} is over ${MAX_SECRET_BYTES} bytes` };
    const bytes = Buffer.alloc(MAX_SECRET_BYTES + 3);
    let got = 0;
    while (got < bytes.length) {
      const read = readSync(fd, bytes, got, bytes.length - got, got);
      if (read === 0) break;
      got += read;
    }
    const checked = checkSecretValue(bytes.subarray(0, got));
    bytes.fill(0);
    return checked.ok ? checked : { ok: false, why: `${shown}: ${checked.why}` };
  } catch (error) {
    return { ok: false, why: `${shown} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
    closeSync(root);
  }
}

/** The operator's value: the variable, else the file; `looked` says what was tried when neither holds one. */
function operatorValue(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  dir: string | undefined,
): SecretValue | { ok: 'absent'; looked: string } {
  const variable = `${SECRET_VARIABLE_PREFIX}${name}`;
  const raw = env[variable];
  if (raw !== undefined && raw !== '') {
    const checked = checkSecretValue(Buffer.from(raw, 'utf8'));
    return checked.ok ? checked : { ok: false, why: `${variable}: ${checked.why}` };
  }
  if (dir === undefined) return { ok: 'absent', looked: `${variable} is not set (and SKILL_MCP_SECRETS_DIR is not set)` };
  const file = readValueFile(dir, [name], `SKILL_MCP_SECRETS_DIR/${name}`);
  return file.ok === 'absent' ? { ok: 'absent', looked: `${variable} is not set and SKILL_MCP_SECRETS_DIR/${name} does not exist` } : file;
}

/**
 * The value of secret `name` for a caller (`subject`: the verified identity's, or undefined), from
 * the runner's private environment `env`; `why` names the sources looked at, never a host path.
 */
export function readSecretValue(env: Readonly<Record<string, string | undefined>>, name: string, subject: string | undefined): SecretValue {
  const dir = readVariable(env, SECRETS_DIR, []);
  if (subject === undefined) {
    const own = operatorValue(env, name, dir);
    if (own.ok !== 'absent') return own;
    return {
      ok: false,
      why: `${own.looked}; the operator sets ${SECRET_VARIABLE_PREFIX}${name} in the runner's environment, or writes the value to SKILL_MCP_SECRETS_DIR/${name} (mode 0600, owned by the runner's user)`,
    };
  }
  const folder = subjectFolder(subject);
  let looked: string;
  if (dir === undefined) looked = 'SKILL_MCP_SECRETS_DIR is not set, so there is no value per person';
  else if (folder === undefined) looked = 'your subject is too long to name a folder, so there is no value per person';
  else {
    const shown = `SKILL_MCP_SECRETS_DIR/${folder}/${name}`;
    const file = readValueFile(dir, [folder, name], shown);
    if (file.ok !== 'absent') return file;
    looked = `${shown} (your own value) does not exist`;
  }
  // Security: one person's run falls back to the operator's value only where the operator says so.
  if (!readVariable(env, SECRETS_SHARED, []).includes(name)) {
    return {
      ok: false,
      why: `${looked}, and ${name} is not in SKILL_MCP_SECRETS_SHARED, so no shared value applies; the operator writes your value to SKILL_MCP_SECRETS_DIR/${folder ?? '<subject>'}/${name} (mode 0600, owned by the runner's user)`,
    };
  }
  const shared = operatorValue(env, name, dir);
  if (shared.ok !== 'absent') return shared;
  return { ok: false, why: `${looked}, and there is no shared value either: ${shared.looked}` };
}
