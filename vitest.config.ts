import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
