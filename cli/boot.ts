/**
 * @module The bin, dist/skill-mcp.js: loads the one bundle (dist/skill-mcp.cjs, everything else) with
 * the V8 code cache that `npm run build` made beside it (dist/skill-mcp.cache). Compiling the bundle
 * is about half of what a start costs above Node's own: with the cache, spawn → first `skills/list`
 * on the bundled skill goes from ~135 ms to ~75 ms (bench/RESULTS.md; docs/platform-notes.md says
 * why Node 20 needs this by hand). Nothing here changes what the bundle does.
 *
 * A cache that cannot be used (missing, refused by cli/code-cache.ts, or rejected by V8 because another
 * Node.js version or other V8 flags made it) only costs time, and stderr says so in one line.
 * `SKILL_MCP_CODE_CACHE=off` skips it. `SKILL_MCP_CODE_CACHE_WRITE=FILE` is for build.mjs only: it
 * writes a fresh cache to FILE when the process exits.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { constants as vmConstants, Script } from 'node:vm';
import { cacheFileBytes, cacheVerdict, type FileFacts } from './code-cache.js';

const BUNDLE = join(__dirname, 'skill-mcp.cjs');
const CACHE = join(__dirname, 'skill-mcp.cache');
const BUILD_HINT = '`npm run build` under this Node.js and these flags makes one';

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
  // The bundle is ASCII (build.mjs checks), so latin1 is its exact text and the fastest decode.
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${bytes.toString('latin1')}\n})`;

  const writeTo = process.env['SKILL_MCP_CODE_CACHE_WRITE'];
  let cachedData: Buffer | undefined;
  if (!writeTo && process.env['SKILL_MCP_CODE_CACHE'] !== 'off') {
    let cacheFd: number | undefined;
    try {
      // O_NOFOLLOW: a link planted in place of the cache is not followed to someone else's file.
      cacheFd = openSync(CACHE, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      say(code === 'ENOENT' ? `no start-up code cache beside the bundle; starting without it (slower). ${BUILD_HINT}` : `the start-up code cache cannot be opened (${code}); starting without it`);
    }
    if (cacheFd !== undefined) {
      const cacheFacts = facts(cacheFd);
      const verdict = cacheFacts.isFile ? cacheVerdict(bundle, cacheFacts, readFileSync(cacheFd), digest) : cacheVerdict(bundle, cacheFacts, Buffer.alloc(0), digest);
      closeSync(cacheFd);
      if (verdict.use) cachedData = verdict.data;
      else say(`the start-up code cache is not used: ${verdict.why}; starting without it`);
    }
  }

  // A bundled library may still hold an import() (pkce-challenge's fallback for a missing WebCrypto):
  // let it load the way it would from a file. Node < 20.12 has no such loader for vm scripts.
  const importModuleDynamically = vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER as typeof vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER | undefined;
  const script = new Script(wrapped, { filename: BUNDLE, ...(cachedData ? { cachedData } : {}), ...(importModuleDynamically !== undefined ? { importModuleDynamically } : {}) });
  if (cachedData && script.cachedDataRejected) say(`V8 rejected the start-up code cache (another Node.js version or other V8 flags, such as NODE_OPTIONS, made it); starting without it. ${BUILD_HINT}`);

  if (writeTo) {
    // Opened now: a front started as root drops to its own uid before it exits.
    const out = openSync(writeTo, 'w', 0o644);
    process.on('exit', () => {
      for (const flag of RUNTIME_FLAG_DEFAULTS) setFlagsFromString(flag);
      writeSync(out, cacheFileBytes(digest, script.createCachedData()));
      closeSync(out);
    });
  }

  const module = { exports: {} };
  (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, require, module, BUNDLE, __dirname);
}

boot();
