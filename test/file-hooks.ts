/**
 * @module Cleanups a shared test module needs after every test file that used it. With vitest's
 * `isolate: false` (vitest.config.ts) a worker runs several files and evaluates a shared module
 * once, so an `afterAll` at a module's top level is registered for the first of those files only:
 * the files after it left their redis-servers running, their temp folders and their runs' tmpfs
 * mounts behind, and skipped the check that no process of theirs was left. A module registers its
 * cleanup here once ({@link afterEachFile}); the setup file test/state-guard.ts runs them after every
 * file, in the order registered — after the file's own afterAll hooks (vitest runs a file's after
 * hooks last-registered first, and the setup file's come first).
 */
type Hook = () => void | Promise<void>;

const HOOKS = Symbol.for('skill-mcp.after-each-file');

function hooks(): Hook[] {
  const global = globalThis as { [HOOKS]?: Hook[] };
  global[HOOKS] ??= [];
  return global[HOOKS];
}

/** Runs `hook` after every test file from now on (it finds what the file left through its module's own state). */
export function afterEachFile(hook: Hook): void {
  hooks().push(hook);
}

/** Every registered cleanup, in turn: test/state-guard.ts's afterAll. The first failure is thrown after all have run. */
export async function runFileHooks(): Promise<void> {
  let failure: unknown;
  for (const hook of hooks()) {
    try {
      await hook();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
