import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Fails the run if a test wrote the real ~/.local/state/skill-mcp.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: suites spawn real servers and runners; more workers only thrash.
    maxWorkers: 2,
  },
});
