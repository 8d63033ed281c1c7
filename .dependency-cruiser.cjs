/**
 * The import rules CI holds (npm run lint; docs/architecture.md §10): no cycle, type imports
 * included; the rooms' directions; nothing of a run's helper or walker, nor the syscall filter's
 * compiler, within the privileged runner's reach. dependency-cruiser reads TypeScript's own resolution (tsconfig.json).
 */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycle, counting type-only imports: the layers must read in one direction.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'sandbox-not-requests',
      comment: 'runner/sandbox/ is a layer below runner/requests/: it turns a plan into a process and knows nothing of requests.',
      severity: 'error',
      from: { path: '^runner/sandbox/' },
      to: { path: '^runner/requests/' },
    },
    {
      name: 'front-and-runner-apart',
      comment: 'server/ and runner/ never import each other; what both need lives in shared/.',
      severity: 'error',
      from: { path: '^server/' },
      to: { path: '^runner/' },
    },
    {
      name: 'runner-and-front-apart',
      comment: 'server/ and runner/ never import each other; what both need lives in shared/.',
      severity: 'error',
      from: { path: '^runner/' },
      to: { path: '^server/' },
    },
    {
      name: 'helper-out-of-the-runner',
      comment:
        "A run's helper and walker parse what scripts send and wrote, and redact what a run returns; none of their code — the walk, the data folder's measure, redaction — is within the privileged runner's reach.",
      severity: 'error',
      from: { path: '^cli/runner-entry\\.ts$' },
      to: {
        path: '^runner/(helper|walker)/|^runner/secrets/(redact|forms|returns)\\.ts$|^runner/workspace/outputs\\.ts$|^runner/data/measure\\.ts$',
        reachable: true,
      },
    },
    {
      name: 'redis-client-out-of-the-runner',
      comment:
        'The Redis client and what speaks through it (the ledger, data turns, the audit mirror) run in the Redis link process (runner/redis/link-main.ts); the runner only starts it and checks what it says (runner/redis/link-protocol.ts).',
      severity: 'error',
      from: { path: '^cli/runner-entry\\.ts$' },
      to: {
        path: '^runner/redis/(connection|link-main)\\.ts$|^runner/ledger/redis\\.ts$|^runner/data/shared-turns\\.ts$|^runner/audit/(mirror|stream-keys)\\.ts$|ioredis',
        reachable: true,
      },
    },
    {
      name: 'seccomp-compiler-out-of-the-runner',
      comment:
        "The syscall filter's policy, table and generator run at build time (build.mjs writes dist/seccomp/); the runner loads the programs (runner/sandbox/seccomp-programs.ts) and never compiles one.",
      severity: 'error',
      from: { path: '^cli/runner-entry\\.ts$' },
      to: { path: '^runner/sandbox/seccomp-(policy|table|bpf|compile)\\.ts$', reachable: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
