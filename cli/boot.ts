/**
 * @module The bin, dist/skill-mcp.js: loads the one bundle (dist/skill-mcp.cjs, everything else) with
 * the V8 code cache that `npm run build` made beside it (dist/skill-mcp.cache). Compiling the bundle
 * is about half of what a start costs above Node's own: with the cache, spawn → first `skills/list`
 * on the bundled skill goes from ~135 ms to ~80 ms (bench/RESULTS.md; docs/platform-notes.md says
 * why Node 20 needs this by hand, docs/architecture.md §11 why Node 22/24's `module.enableCompileCache()`
 * does not replace it: measured slower, and its folder is trusted less). Nothing here changes what the bundle does.
 *
 * A cache that cannot be used (missing, refused by cli/code-cache.ts, or rejected by V8 because another
 * Node.js version or other V8 flags made it) only costs time, and stderr says so in one line; a
 * server run by the bundle's owner writes a fresh one when it exits (an npm package built under
 * another Node.js is fast from its second start).
 * `SKILL_MCP_CODE_CACHE=off` skips it. `SKILL_MCP_CODE_CACHE_WRITE=FILE` is for build.mjs only: it
 * writes a fresh cache to FILE when the process exits.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { constants as vmConstants, Script } from 'node:vm';
import { cacheFileBytes, cacheVerdict, type FileFacts } from './code-cache.js';

/** The bundle's first bytes, from build.mjs (`define`): the head of the function expression it is. */
declare const SKILL_MCP_BUNDLE_HEAD: string;

const BUNDLE = join(__dirname, 'skill-mcp.cjs');
const CACHE = join(__dirname, 'skill-mcp.cache');
/** The privileged commands' own bundles (cli/runner-entry.ts, cli/guard-entry.ts). */
const PRIVILEGED_BUNDLES = new Map([
  ['runner', join(__dirname, 'skill-mcp-runner.cjs')],
  ['runner-guard', join(__dirname, 'skill-mcp-guard.cjs')],
]);
/** Said when this process cannot make a new cache itself. */
const HEAL_HINT = "The bundle's owner gets a new one by starting the server once (or with `npm run build` in a checkout)";

/**
 * V8 flags the front sets at run time (server/start.ts, server/tools/collect.ts). V8 stamps a cache
 * with a hash of the flags in force when it is made and rejects it under other flags, so they are
 * put back to their defaults before a cache is made: a start, which has not set them yet, can use it.
 */
const RUNTIME_FLAG_DEFAULTS = ['--heap-growing-percent=0', '--no-expose-gc'];

function facts(fd: number): FileFacts {
  const stat = fstatSync(fd);
  return { uid: stat.uid, mode: stat.mode, isFile: stat.isFile() };
}

function say(line: string): void {
  process.stderr.write(`skill-mcp: ${line}\n`);
}

function boot(): void {
  const bundleFd = openSync(BUNDLE, 'r');
  const bytes = readFileSync(bundleFd);
  const bundle = facts(bundleFd);
  closeSync(bundleFd);
  const digest = createHash('sha256').update(bytes).digest();
  // The bundle is ASCII (build.mjs checks), so latin1 is its exact text and the fastest decode. Its
  // file is already one function expression (build.mjs), so this is the only copy of its 3 MB made
  // here: joining a wrapper on at each start made V8 flatten a second one.
  const wrapped = bytes.toString('latin1');
  if (!wrapped.startsWith(SKILL_MCP_BUNDLE_HEAD)) {
    say(`${BUNDLE} is not the bundle this bin was built with (it does not start as build.mjs writes it); run \`npm run build\` again`);
    process.exit(1);
  }

  const writeTo = process.env['SKILL_MCP_CODE_CACHE_WRITE'];
  const wanted = !writeTo && process.env['SKILL_MCP_CODE_CACHE'] !== 'off';
  let cachedData: Buffer | undefined;
  /** Why no cache is used, when one is wanted. */
  let unused: string | undefined;
  if (wanted) {
    let cacheFd: number | undefined;
    try {
      // O_NOFOLLOW: a link planted in place of the cache is not followed to someone else's file.
      cacheFd = openSync(CACHE, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      unused = code === 'ENOENT' ? 'there is none beside the bundle' : `it cannot be opened (${code})`;
    }
    if (cacheFd !== undefined) {
      const cacheFacts = facts(cacheFd);
      const verdict = cacheVerdict(bundle, cacheFacts, cacheFacts.isFile ? readFileSync(cacheFd) : Buffer.alloc(0), digest);
      closeSync(cacheFd);
      if (verdict.use) cachedData = verdict.data;
      else unused = verdict.why;
    }
  }

  // A bundled library may still hold an import() (pkce-challenge's fallback for a missing WebCrypto):
  // let it load the way it would from a file. Node < 20.12 has no such loader for vm scripts.
  const importModuleDynamically = vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER as
    | typeof vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER
    | undefined;
  const script = new Script(wrapped, {
    filename: BUNDLE,
    ...(cachedData ? { cachedData } : {}),
    ...(importModuleDynamically !== undefined ? { importModuleDynamically } : {}),
  });
  if (cachedData && script.cachedDataRejected)
    unused = 'V8 rejected it (another Node.js version or other V8 flags, such as NODE_OPTIONS, made it)';

  if (unused !== undefined) {
    const heals = mayHeal(bundle.uid);
    say(
      `the start-up code cache is not used: ${unused}; starting without it (slower). ${heals ? 'A new one is written beside the bundle when this server exits' : HEAL_HINT}`,
    );
    if (heals) process.on('exit', () => heal(script, digest));
  }
  if (writeTo) {
    // Opened now: a front started as root drops to its own uid before it exits.
    const out = openSync(writeTo, 'w', 0o644);
    process.on('exit', () => {
      writeSync(out, freshCache(script, digest));
      closeSync(out);
    });
  }

  const module = { exports: {} };
  (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, require, module, BUNDLE, __dirname);
}

/** A cache of what this process compiled, stamped with the default V8 flags (see RUNTIME_FLAG_DEFAULTS). */
function freshCache(script: Script, digest: Buffer): Buffer {
  for (const flag of RUNTIME_FLAG_DEFAULTS) setFlagsFromString(flag);
  return cacheFileBytes(digest, script.createCachedData());
}

/**
 * Whether this process may replace an unusable cache when it exits, the way Python refreshes its
 * __pycache__: only a server (the stdio or HTTP front, whose run compiles what a start needs), run
 * by the bundle's owner, not root (a root front drops to another uid before it exits). What it
 * writes is trusted exactly as the bundle is: its owner's file, beside it.
 */
function mayHeal(bundleUid: number): boolean {
  const command = process.argv[2];
  const uid = process.getuid?.();
  // Node started with one of those flags itself: a cache made with them reset would be rejected at
  // every start, and rewritten at every exit.
  const startFlags = [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)];
  if (startFlags.some((flag) => /^--(no-)?(expose[-_]gc|heap[-_]growing[-_]percent)\b/.test(flag))) return false;
  return (command === undefined || command === '--http') && uid !== undefined && uid !== 0 && uid === bundleUid;
}

/** Writes a fresh cache beside the bundle: a private temporary file, renamed over the old one. */
function heal(script: Script, digest: Buffer): void {
  const temporary = `${CACHE}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, freshCache(script, digest), { mode: 0o644, flag: 'wx' });
    renameSync(temporary, CACHE);
  } catch {
    // Not writable after all: the next start says so again, and starts the same way.
    rmSync(temporary, { force: true });
  }
}

/**
 * The privileged commands load their own bundle, with no code cache (cli/runner-entry.ts,
 * cli/guard-entry.ts). Security: a root runner or guard runs only a bundle no one but its owner can
 * write, and never follows a link to one; anything else stops it before a line of it runs.
 */
function bootPrivileged(bundle: string): void {
  const fd = openSync(bundle, constants.O_RDONLY | constants.O_NOFOLLOW);
  const stat = fstatSync(fd);
  closeSync(fd);
  if (process.getuid?.() === 0 && (!stat.isFile() || (stat.mode & 0o022) !== 0)) {
    say(
      `refusing to run ${bundle} as root: it is writable by others than its owner (mode ${(stat.mode & 0o7777).toString(8)}); chmod go-w it`,
    );
    process.exit(1);
  }
  require(bundle);
}

const privileged = PRIVILEGED_BUNDLES.get(process.argv[2] ?? '');
if (privileged !== undefined) bootPrivileged(privileged);
else boot();
