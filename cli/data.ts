/**
 * @module `skill-mcp data ls|du|rm|export|import`: the operator's view of skills' data folders
 * (docs/isolation.md, "Data folders"), on the disk the runner keeps them on. Nothing below a folder
 * is read by this process: as root every look inside runs as an unprivileged uid in the folder's
 * group (`find`, `tar` under setpriv, never following a link), the way the runner's walker measures;
 * otherwise as this user, who is the runner's. What `du` and `rm` find is kept as the folder's
 * record, so a folder freed here is run again (no more `DATA_FULL`).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseFlags, stringFlag, UsageError, wantsHelp } from '../shared/cli-args.js';
import { ANYONE, dataBaseOf } from '../shared/data.js';
import { stateDirOf } from '../shared/state-dir.js';
import { openDataFolder, readDataRecord, writeDataRecord } from '../runner/data/folder.js';
import { takeFolderTurn } from '../runner/data/folder-turn.js';
import type { DataRecord } from '../runner/data/folder.js';
import { DEFAULT_DATA_GID_RANGE } from '../runner/options.js';
import { parseUidRange } from '../runner/uids/pool.js';

export const DATA_USAGE = `usage:
  skill-mcp data ls [--state-dir DIR] [--json]
      every data folder (SKILL/WHO) with what its last run left: bytes, entries, quota, FULL
  skill-mcp data du SKILL[/WHO] [--state-dir DIR]
      measure the folder now (no link followed) and keep the figures: one back under its quota runs again
  skill-mcp data rm SKILL[/WHO] [--state-dir DIR]
      empty the folder (links are removed, never followed); its next run starts from nothing
  skill-mcp data export SKILL[/WHO] FILE.tar [--state-dir DIR]
  skill-mcp data import SKILL[/WHO] FILE.tar [--state-dir DIR]
      a tar of the folder / unpack one into it (regular files and folders only)
WHO is "anyone" (callers without an identity, the default) or s-<hash> of a subject (data ls lists them).
The base is MCP_DATA_DIR when set, else data/ in the state folder (--state-dir, SKILL_MCP_STATE_DIR, the default).
Run it as the user the runner runs as. rm and import refuse while a run of the folder is in progress (try again when it ends).`;

/** The uid every look inside a folder runs as, as root: no run's, never root. */
const OUTSIDER_UID = 65534;

type Key = [string, string];

function keyOf(text: string | undefined): Key {
  const [skill, who = ANYONE, ...rest] = (text ?? '').split('/');
  if (!skill || rest.length > 0 || skill.startsWith('.') || who.startsWith('.'))
    throw new UsageError(`name a data folder as SKILL or SKILL/WHO (data ls lists them)`, DATA_USAGE);
  return [skill, who];
}

/** The command line of a look inside `dir`: as root, an unprivileged uid in the folder's group. */
function inside(dir: string, argv: string[]): string[] {
  if (process.getuid?.() !== 0) return argv;
  const gid = statSync(dir).gid;
  return ['setpriv', `--reuid=${OUTSIDER_UID}`, `--regid=${gid}`, '--clear-groups', '--no-new-privs', '--', ...argv];
}

function runInside(dir: string, argv: string[], input?: Buffer): Buffer {
  const [command, ...args] = inside(dir, argv);
  const done = spawnSync(command!, args, { input, maxBuffer: 1024 ** 3, env: { PATH: '/usr/bin:/bin', LANG: 'C' } });
  if (done.error) throw new UsageError(`${command} could not be run (${(done.error as NodeJS.ErrnoException).code})`, undefined);
  if (done.status !== 0) process.stderr.write(done.stderr.toString('utf8'));
  return done.stdout;
}

/** Measures `dir` with find (no link followed), as runner/data/usage.ts does. */
function measure(dir: string): { bytes: number; entries: number; odd: string[] } {
  const out = runInside(dir, ['find', dir, '-mindepth', '1', '-printf', '%y %s %P\\0']).toString('utf8');
  const seen = { bytes: 0, entries: 0, odd: [] as string[] };
  for (const line of out.split('\0')) {
    if (line === '') continue;
    const [type, size] = line.split(' ', 2);
    seen.entries++;
    if (type === 'f') seen.bytes += Number(size);
    else if (type !== 'd') seen.odd.push(line.slice(line.indexOf(' ', 2) + 1));
  }
  return seen;
}

/** Keeps what was measured as the folder's record, judged against the quota its last run had. */
function keep(base: string, key: Key, seen: { bytes: number; entries: number }, was: DataRecord | undefined): DataRecord {
  const quota = was?.quota;
  const full = quota !== undefined && (seen.bytes > quota.bytes || seen.entries > quota.files);
  const record = { bytes: seen.bytes, entries: seen.entries, full, ...(quota ? { quota } : {}) };
  writeDataRecord(base, key, record);
  return record;
}

function line(key: readonly string[], r: DataRecord | undefined): string {
  if (r === undefined) return `${key.join('/')}\tnot run yet`;
  const quota = r.quota ? ` of ${r.quota.bytes} bytes, ${r.quota.files} entries` : '';
  return `${key.join('/')}\t${r.bytes} bytes\t${r.entries} entries${quota}${r.full ? '\tFULL (runs refused DATA_FULL)' : ''}`;
}

function folders(base: string): Key[] {
  const keys: Key[] = [];
  if (!existsSync(base)) return keys;
  for (const skill of readdirSync(base).sort()) {
    if (skill.startsWith('.')) continue;
    for (const who of readdirSync(join(base, skill)).sort()) keys.push([skill, who]);
  }
  return keys;
}

export function dataMain(argv: string[]): void {
  if (wantsHelp(argv)) {
    process.stdout.write(`${DATA_USAGE}\n`);
    return;
  }
  const [verb, ...rest] = argv;
  const { values, positionals } = parseFlags(
    rest,
    { 'state-dir': { type: 'string' }, json: { type: 'boolean' } },
    { positionals: true, usage: DATA_USAGE },
  );
  const env = process.env;
  const base = dataBaseOf(env, stringFlag(values, 'state-dir') ?? stateDirOf(env));
  const out = (text: string): void => void process.stdout.write(`${text}\n`);
  if (verb === 'ls') {
    const rows = folders(base).map((key) => ({ folder: key.join('/'), record: readDataRecord(base, key) }));
    if (values['json'] === true) out(JSON.stringify(rows));
    else for (const row of rows) out(line(row.folder.split('/'), row.record));
    return;
  }
  if (verb !== 'du' && verb !== 'rm' && verb !== 'export' && verb !== 'import')
    throw new UsageError(
      verb === undefined ? 'data needs a verb: ls, du, rm, export or import' : `unknown data verb ${JSON.stringify(verb)}`,
      DATA_USAGE,
    );
  const key = keyOf(positionals[0]);
  const dir = join(base, ...key);
  // Security: rm and import change the folder, so they take its turn as a run does (runner/data/folder-turn.ts):
  // never emptied or filled under a running run, and no run starts while they work.
  const turn = verb === 'rm' || verb === 'import' ? takeFolderTurn(base, key) : undefined;
  if (turn !== undefined && !turn.ok)
    throw new UsageError(
      `a run is using this folder (${key.join('/')}, held by process ${turn.holder || 'unknown'}); nothing was changed: try again when it ends`,
      undefined,
    );
  try {
    change(verb, key, base, dir, positionals, out);
  } finally {
    if (turn?.ok) turn.give();
  }
}

function change(
  verb: 'du' | 'rm' | 'export' | 'import',
  key: Key,
  base: string,
  dir: string,
  positionals: string[],
  out: (text: string) => void,
): void {
  const env = process.env;
  const was = readDataRecord(base, key);
  if (verb === 'import') {
    const file = positionals[1];
    if (file === undefined) throw new UsageError('data import needs the tar file to unpack', DATA_USAGE);
    const tar = spawnSync('tar', ['-tvf', file], { maxBuffer: 1024 ** 3 });
    // Security: only files and folders come in; a link or device in the archive could point the next run anywhere.
    const kinds = tar.stdout
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l[0]);
    if (tar.status !== 0 || kinds.some((k) => k !== '-' && k !== 'd'))
      throw new UsageError(`${file} is not a tar of regular files and folders only; nothing was unpacked`, DATA_USAGE);
    const gids = parseUidRange(env['SKILL_MCP_DATA_GID_RANGE'] || DEFAULT_DATA_GID_RANGE);
    openDataFolder({ base, ...(process.getuid?.() === 0 ? { gids } : {}) }, key);
    runInside(
      dir,
      ['sh', '-c', 'umask 007 && exec tar -C "$1" -xf - --no-same-owner --no-same-permissions', 'skill-mcp-import', dir],
      readFileSync(file),
    );
  } else if (!existsSync(dir)) throw new UsageError(`there is no data folder ${key.join('/')} (data ls lists them)`, DATA_USAGE);
  if (verb === 'export') {
    const file = positionals[1];
    if (file === undefined) throw new UsageError('data export needs the tar file to write', DATA_USAGE);
    const bytes = runInside(dir, ['tar', '-C', dir, '-cf', '-', '.']);
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    writeSync(fd, bytes);
    closeSync(fd);
    out(`wrote ${key.join('/')} to ${file} (${bytes.length} bytes)`);
    return;
  }
  if (verb === 'rm') runInside(dir, ['find', dir, '-mindepth', '1', '-delete']);
  const seen = measure(dir);
  const record = keep(base, key, seen, was);
  out(line(key, record));
  if (seen.odd.length > 0) out(`links, FIFOs or devices (never followed): ${seen.odd.join(', ')}`);
  if (verb === 'rm' && seen.entries > 0)
    out(`${seen.entries} entries could not be removed (made unreadable to the folder's group by a run?)`);
}
