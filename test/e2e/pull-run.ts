/**
 * @module What the `skill-mcp pull` suites share: the built bin run as a real process (it starts
 * the server it pulls from itself, or connects to a real HTTP one), its report, and the folder
 * comparisons.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, SERVER_JS, VARIED_SKILLS, baseEnv } from './harness.js';

export interface PullRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout's report lines by kind: `added`, `updated`, `unchanged`, `refused`, `gone`, each `name: text`. */
  lines: { kind: string; name: string; text: string }[];
}

/** Runs `skill-mcp pull ARGS` with the e2e base environment plus `env` (which a stdio server it starts inherits). */
export function runPull(args: string[], env: Record<string, string> = {}): Promise<PullRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SERVER_JS, 'pull', ...args],
      { cwd: REPO, env: { ...baseEnv(), ...env }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        const lines = stdout
          .split('\n')
          .map((l) => /^(added|updated|unchanged|refused|gone)\s+(.+?)(?:: (.*))?$/.exec(l))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => ({ kind: m[1]!, name: m[2]!, text: m[3] ?? '' }));
        resolve({ code, stdout, stderr, lines });
      },
    );
  });
}

/** The command that serves a folder over stdio: our own bin. */
export const OUR_SERVER = [process.execPath, SERVER_JS];

/**
 * Every file under `dir` as sorted `/`-separated relative paths, as an agent reading the folder
 * sees it: pull's own links (into `.skill-mcp-store/`) are followed and the store itself is left
 * out ({@link storeOf} lists it); any other link and dotfile is listed as a name.
 */
export function filesUnder(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((e) => {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.skill-mcp-store') return [];
      const own = e.isSymbolicLink() && readlinkSync(join(dir, path)).startsWith('.skill-mcp-store/');
      return e.isDirectory() || own ? filesUnder(dir, path) : [path];
    })
    .sort();
}

/** The snapshot folders in `dir`'s store, by skill: `{name: [snapshot, ...]}`. */
export function storeOf(dir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const store = join(dir, '.skill-mcp-store');
  if (!existsSync(store)) return out;
  for (const snap of readdirSync(store).sort()) {
    for (const inner of readdirSync(join(store, snap))) {
      out[inner] ??= [];
      out[inner].push(snap);
    }
  }
  return out;
}

/** The varied fixture's skills by name (the `skills/` folder is the third layout). */
export function fixtureSkills(root = VARIED_SKILLS): Map<string, string> {
  const dirs = new Map<string, string>();
  for (const name of readdirSync(root)) {
    if (name === 'skills') for (const inner of readdirSync(join(root, 'skills'))) dirs.set(inner, join(root, 'skills', inner));
    else dirs.set(name, join(root, name));
  }
  return dirs;
}

export const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Whether `copy` holds exactly the files of `source`, byte for byte; the first difference otherwise. */
export function differenceBetween(source: string, copy: string): string | undefined {
  const want = filesUnder(source);
  const got = filesUnder(copy);
  if (JSON.stringify(want) !== JSON.stringify(got)) return `files differ: ${JSON.stringify(want)} vs ${JSON.stringify(got)}`;
  const differing = want.find((f) => !readFileSync(join(source, f)).equals(readFileSync(join(copy, f))));
  return differing === undefined ? undefined : `${differing} differs`;
}

export interface LockFile {
  lockfileVersion: number;
  skills: Record<
    string,
    { source: { url?: string; command?: string[] }; uri: string; via: string; pulledAt: string; files: Record<string, string> }
  >;
}

export function readLockFile(dir: string): LockFile {
  return JSON.parse(readFileSync(join(dir, '.skill-mcp-lock.json'), 'utf8')) as LockFile;
}
