import { defineConfig } from 'vitest/config';
import { tierFiles } from './test/tiers.mjs';

/** One vitest project per CI tier (test/tiers.mjs): `.ci/run` picks the tiers each pass needs. */
const tier = (name: 'unit' | 'front' | 'level' | 'node') => ({ extends: true as const, test: { name, include: tierFiles(name) } });

export default defineConfig({
  test: {
    projects: [tier('unit'), tier('front'), tier('level'), tier('node')],
    setupFiles: ['test/expect-env.ts'],
    // Fails the run if a test wrote the real ~/.local/state/skill-mcp.
    globalSetup: ['test/global-setup.ts'],
    // Backstops against hangs, not speed limits: tests drive real processes, which a busy 2-core
    // machine can slow several-fold without anything being wrong.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: suites spawn real servers and runners; more workers only thrash.
    maxWorkers: 2,
  },
});
