/**
 * @module Reads a git repository for `skill-mcp pull --git` with the `git` CLI, through plumbing
 * only, so nothing from the repository ever runs on this machine:
 *
 * - a fresh bare repository in a private temp folder (mode 0700), so there are no hooks to run and
 *   no config but ours: the user's and the system's git config are ignored (GIT_CONFIG_NOSYSTEM,
 *   GIT_CONFIG_GLOBAL=/dev/null, HOME=the temp folder), `core.hooksPath=/dev/null`, no prompts;
 * - only the transports the user named are allowed (`protocol.allow=never`, then https, ssh, and
 *   file only for a file:// URL), so a URL cannot reach `ext::` or another helper;
 * - `git fetch --depth 1 --no-tags` of one ref (or, with --locked, one commit), then `ls-tree` and
 *   `cat-file`: no checkout, so no `.gitattributes` filter, smudge, LFS or checkout hook ever runs,
 *   and submodules are never fetched.
 *
 * The temp folder is removed when the pull ends, whatever happened.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A tree entry under the pulled folder, as `git ls-tree -r -l -z` names it. */
export interface TreeEntry {
  mode: string;
  type: string;
  oid: string;
  /** Bytes for a blob; undefined for a gitlink. */
  size: number | undefined;
  /** Relative to the pulled folder, `/`-separated, as the tree spells it (never unquoted: -z). */
  path: string;
}

export class GitError extends Error {}

/** A URL as it may be shown and recorded: no password, no user for https, no query or fragment. */
export function safeGitUrl(url: string): string {
  const parsed = new URL(url);
  // Security: a token in the URL (https://user:TOKEN@host) is never written to the lock or the report.
  parsed.password = '';
  if (parsed.protocol !== 'ssh:') parsed.username = '';
  parsed.search = '';
  parsed.hash = '';
  return parsed.href;
}

export interface Repo {
  /** The commit the fetch gave, as a full hex id. */
  commit: string;
  /** Every entry under `path` at `commit`; `undefined` when `path` is not a folder there. */
  list(path: string): TreeEntry[] | undefined;
  /** The bytes of these blobs, in order; the sizes were capped before this is called. */
  read(oids: readonly string[], totalBytes: number): Buffer[];
  close(): void;
}

/**
 * Fetches `want` (a ref, or a commit id) from `url` into a fresh bare repository.
 * Throws GitError with a message fit to show (the URL in it has no credentials).
 */
export function openRepo(url: string, want: string): Repo {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-git-'));
  const gitDir = join(home, 'repo.git');
  const fileUrl = new URL(url).protocol === 'file:';
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_DIR: gitDir,
    // ssh:// uses the person's agent and known_hosts, as their own `git clone` would.
    ...(process.env['SSH_AUTH_SOCK'] ? { SSH_AUTH_SOCK: process.env['SSH_AUTH_SOCK'] } : {}),
  };
  const config = [
    '-c',
    'core.hooksPath=/dev/null',
    '-c',
    'protocol.allow=never',
    '-c',
    'protocol.https.allow=always',
    '-c',
    'protocol.ssh.allow=always',
    ...(fileUrl ? ['-c', 'protocol.file.allow=always'] : []),
  ];
  const git = (args: readonly string[], input?: string, maxBuffer = 64 * 1024 * 1024): Buffer => {
    const result = spawnSync('git', [...config, ...args], { env, input, maxBuffer, stdio: ['pipe', 'pipe', 'pipe'] });
    if (result.error) throw new GitError(`git ${args[0]} could not run (${result.error.message}); is git installed?`);
    if (result.status !== 0) {
      const why =
        result.stderr
          .toString('utf8')
          .split('\n')
          .filter((l) => l.trim())
          .slice(-1)[0] ?? `exit ${result.status}`;
      // Security: git's message may repeat the URL as given, credentials included.
      throw new GitError(why.split(url).join(safeGitUrl(url)));
    }
    return result.stdout;
  };
  try {
    git(['init', '--bare', '-q', gitDir]);
    // `--` ends the options: a ref or URL starting with "-" cannot become one (--upload-pack=...).
    git(['fetch', '-q', '--depth', '1', '--no-tags', '--no-recurse-submodules', '--', url, want]);
    const commit = git(['rev-parse', '--verify', 'FETCH_HEAD^{commit}']).toString('utf8').trim();
    return {
      commit,
      list(path) {
        const spec = path === '' ? `${commit}^{tree}` : `${commit}:${path}`;
        const kind = spawnSync('git', [...config, 'cat-file', '-t', spec], { env })
          .stdout?.toString('utf8')
          .trim();
        if (kind !== 'tree') return undefined;
        return parseTree(git(['ls-tree', '-r', '-l', '-z', spec]));
      },
      read(oids, totalBytes) {
        if (oids.length === 0) return [];
        const out = git(['cat-file', '--batch'], `${oids.join('\n')}\n`, totalBytes + oids.length * 128 + 1024);
        return parseBatch(out, oids);
      },
      close() {
        rmSync(home, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(home, { recursive: true, force: true });
    throw error;
  }
}

function parseTree(raw: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let start = 0;
  while (start < raw.length) {
    const end = raw.indexOf(0, start);
    const record = raw.subarray(start, end < 0 ? raw.length : end);
    start = end < 0 ? raw.length : end + 1;
    const tab = record.indexOf(9);
    const [mode, type, oid, size] = record.subarray(0, tab).toString('utf8').split(/ +/);
    entries.push({
      mode: mode!,
      type: type!,
      oid: oid!,
      size: size === '-' ? undefined : Number(size),
      path: record.subarray(tab + 1).toString('utf8'),
    });
  }
  return entries;
}

/** `cat-file --batch` output: for each object `<oid> blob <size>\n<bytes>\n`. */
function parseBatch(raw: Buffer, oids: readonly string[]): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const oid of oids) {
    const nl = raw.indexOf(10, at);
    const header = raw.subarray(at, nl).toString('utf8').split(' ');
    if (header[0] !== oid || header[1] !== 'blob')
      throw new GitError(`git cat-file answered ${JSON.stringify(header.join(' '))} for blob ${oid}`);
    const size = Number(header[2]);
    out.push(raw.subarray(nl + 1, nl + 1 + size));
    at = nl + 1 + size + 1;
  }
  return out;
}
