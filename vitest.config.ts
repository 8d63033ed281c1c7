import { defineConfig } from 'vitest/config';
import { tierFiles } from './test/tiers.mjs';

/** One vitest project per CI tier (test/tiers.mjs): `.ci/run` picks the tiers each pass needs. */
const tier = (name: 'unit' | 'front' | 'level' | 'uid' | 'node') => ({
  extends: true as const,
  test: { name, include: tierFiles(name) },
});

export default defineConfig({
  test: {
    projects: [tier('unit'), tier('front'), tier('level'), tier('uid'), tier('node')],
    // state-guard.ts: a test that would start the product on the real state folder fails at the spawn.
    setupFiles: ['test/expect-env.ts', 'test/state-guard.ts'],
    // The suite's own XDG_STATE_HOME, and the real state folders the guard keeps tests out of.
    globalSetup: ['test/global-setup.ts'],
    // Backstops against hangs, not speed limits: tests drive real processes, which a busy 2-core
    // machine can slow several-fold without anything being wrong.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker runs several files one after another and imports what they share once (a fresh
    // worker and the SDK's and harnesses' imports cost ~0.7 s of CPU per file; CI is bound by CPU).
    // A file puts back what it changes in its process and gets its own temp tree all the same
    // (test/suite-tmp.ts; CONTRIBUTING.md, "Tests and CI").
    isolate: false,
    // Three workers on CI's two cores: a third of a two-worker pass was idle (tests waiting on
    // real servers, notifications and runs), and every test holds on a busy machine. More thrash.
    maxWorkers: 3,
  },
});
