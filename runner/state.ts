/**
 * @module The runner's state directory: created 0700 and owned by the runner, it holds the token
 * key (`token.key`, 0600), the spent-token markers (`spent/`), the audit anchor and lock. The key is
 * random and kept so tokens survive a restart (docs/architecture.md §7), or derived from `MCP_CONFIRM_SECRET` when
 * the owner sets one (replicas). Several runners may use one state directory at once (standalone
 * starts one per `skill-mcp`): every file here is created so that a concurrent runner sees it whole.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  writeSync,
  constants,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SkillMcpError } from '../shared/errors.js';
import { deriveKey } from '../shared/keys.js';
import { TOKEN_KEY_BYTES } from '../shared/token.js';

/** 10 ms apart: how long a key another runner is writing is waited for. */
const KEY_WAIT_TRIES = 100;

/**
 * Creates (or checks) a private directory. Security: a directory that is a symlink or belongs to
 * someone else could be swapped under us to plant a known key or truncate the ledger.
 */
export function ensurePrivateDir(dir: string, mode = 0o700): void {
  const first = mkdirSync(dir, { recursive: true, mode });
  // Folders made on the way get `mode` too, not what the umask (0077 in the runner) leaves of it: a
  // root runner's state folder must stay traversable by run uids all the way (shared/state-dir.ts).
  if (first !== undefined)
    for (let path = dirname(resolve(dir)); path.length >= resolve(first).length && path !== dirname(path); path = dirname(path))
      chmodSync(path, mode);
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new SkillMcpError('INTERNAL', `${dir} is not a directory (a symlink or file is refused)`);
  if (st.uid !== process.getuid!()) throw new SkillMcpError('INTERNAL', `${dir} belongs to uid ${st.uid}, not to the runner`);
  if ((st.mode & 0o777) !== mode) {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
  }
}

/** Opens a private file (0600, no symlink following) for the runner's own use. */
export function openPrivateFile(path: string, flags: number): number {
  // libuv opens every file close-on-exec, so none of these fds reaches a script.
  const fd = openSync(path, flags | constants.O_NOFOLLOW, 0o600);
  const st = fstatSync(fd);
  // Security: a hard link or foreign file in our directory must not become our key or log.
  if (!st.isFile() || st.uid !== process.getuid!() || st.nlink > 1) {
    closeSync(fd);
    throw new SkillMcpError('INTERNAL', `${path} is not a private regular file of the runner`);
  }
  if ((st.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600);
  return fd;
}

/** Reads a file of the state directory as text, never through a symlink. */
export function readNoFollow(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The token key. The owner's secret (MCP_CONFIRM_SECRET_FILE or MCP_CONFIRM_SECRET, shared/keys.ts)
 * wins, through its token-only derivation; otherwise a random key is created once and kept in
 * `<stateDir>/token.key`. Security: the token key is the runner's alone — never the key a front
 * holds — so nothing a front has can mint a token.
 */
export function loadTokenKey(stateDir: string, secret: string | undefined): { key: Buffer; source: 'secret' | 'state-dir' } {
  if (secret !== undefined && secret !== '') return { key: deriveKey(secret, 'confirm-token'), source: 'secret' };
  const path = join(stateDir, 'token.key');
  let fd: number;
  try {
    fd = openPrivateFile(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL);
    try {
      writeSync(fd, randomBytes(TOKEN_KEY_BYTES));
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // A runner starting at the same moment may be between creating the key and writing it: wait a
  // little for the whole key rather than fail (or, worse, make another and split the runners).
  for (let attempt = 0; ; attempt++) {
    fd = openPrivateFile(path, constants.O_RDONLY);
    try {
      const key = Buffer.alloc(TOKEN_KEY_BYTES);
      if (readSync(fd, key, 0, TOKEN_KEY_BYTES, 0) === TOKEN_KEY_BYTES) return { key, source: 'state-dir' };
    } finally {
      closeSync(fd);
    }
    if (attempt >= KEY_WAIT_TRIES) throw new SkillMcpError('INTERNAL', 'token.key is shorter than a key; delete it to make a new one');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}
