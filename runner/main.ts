/**
 * @module `skill-mcp runner`: the privileged daemon (docs/architecture.md §8). Start-up order matters and is:
 * close inherited fds → keep a private copy of the environment → scrub /proc/self/environ →
 * state dir, scratch dir (removing crashed runs' folders), token key, ledger (spent-token markers,
 * an old single-file ledger migrated), audit log (checked against its anchor, under the audit lock
 * other runners on this state dir share, before anything is appended) → probe interpreters and sandbox tools → listen.
 * SIGTERM/SIGINT kill every run (waiting ones too), close the socket and exit.
 */
import { grantFrom } from '../shared/grant.js';
import { wantsHelp } from '../shared/cli-args.js';
import { readSharedSettings, startupReport } from '../shared/settings.js';
import { refuseToStart } from '../shared/settings-schema.js';
import type { ErrorCode } from '../shared/errors.js';
import { configView, realRoots } from '../shared/config-view.js';
import { readFrontSecretFile } from '../shared/front-secret.js';
import { readConfirmSecret } from '../shared/keys.js';
import { anchorPathIn } from './audit/anchor.js';
import { AuditLog } from './audit/log.js';
import { readFrontSecretLine } from './requests/front-auth.js';
import { closeInheritedFds, scrubEnviron } from './hygiene.js';
import { openLedger } from './ledger/select.js';
import { parseRunnerOptions, RUNNER_USAGE } from './options.js';
import { loadPeerCredReader } from './requests/peer-cred.js';
import { probePlatform } from './sandbox/platform.js';
import { listen } from './requests/server.js';
import { removeStaleRunFolders } from './workspace/scratch.js';
import { RunnerService } from './requests/service.js';
import { resolveCapacity, thisMachine } from './requests/capacity.js';
import { SkillMcpError } from '../shared/errors.js';
import { lineWriter, readLogFormat } from '../shared/log-line.js';
import { ensurePrivateDir, loadTokenKey } from './state.js';
import { DEFAULT_CLAIM_DIR, UidClaims } from './uids/claims.js';
import { UidPool } from './uids/pool.js';

/** One line on stderr, as text or JSON (SKILL_MCP_LOG_FORMAT; an unreadable value keeps text). */
function log(message: string): void {
  lineWriter('runner', 'skill-mcp runner', readLogFormat(process.env)).say(message);
}

export async function runnerMain(argv: string[], options: { bundledSkills: string }): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${RUNNER_USAGE}\n`);
    return;
  }
  const fdsClosed = closeInheritedFds();
  // Security: files the runner creates (state, scratch) are private unless made otherwise.
  process.umask(0o077);
  // The private copy: granted values are read from here; process.env is what gets scrubbed.
  const env: Record<string, string | undefined> = { ...process.env };
  // A command line it does not accept is a UsageError (exit 2, cli/main.ts); a bad value a ConfigError (exit 1).
  const opts = parseRunnerOptions(argv, env);
  // The front reads the same settings the same way (server/start.ts): it refuses what we refuse.
  const settings = readSharedSettings(env, options.bundledSkills);
  refuseToStart(settings.issues);
  for (const line of startupReport(settings)) log(line);
  const environ = scrubEnviron(process.env);
  const hosted = settings.hosted;
  // Read before listening: no connection is served by a runner that does not know its front yet.
  const frontSecret = opts.frontSecret?.from === 'stdin' ? await readFrontSecretLine(process.stdin) : opts.frontSecret ? readFrontSecretFile(opts.frontSecret.path) : undefined;

  ensurePrivateDir(opts.stateDir);
  const asRoot = process.getuid?.() === 0;
  // Root: the scratch parent must be traversable by run uids (each run's own dir is 0700, theirs).
  ensurePrivateDir(opts.scratchDir, asRoot ? 0o711 : 0o700);
  // A crashed predecessor's run folders (a script's HOME, maybe secrets it wrote) go before any run.
  const stale = removeStaleRunFolders(opts.scratchDir);
  if (stale.failed > 0) log(`warning: ${stale.failed} stale run folder(s) under the scratch directory could not be removed`);
  const confirmSecret = readConfirmSecret(env);
  const { key, source: keySource } = loadTokenKey(opts.stateDir, 'secret' in confirmSecret ? confirmSecret.secret : undefined);
  const audit = new AuditLog(opts.auditPath, anchorPathIn(opts.stateDir));
  const anchor = audit.anchorFinding;
  if (anchor.audit_anchor === 'truncated' || anchor.audit_anchor === 'replaced') {
    log(`warning: the audit log does not match its anchor (${anchor.audit_anchor}: the log ends at seq ${anchor.audit_log_last_seq}, the runner last wrote seq ${anchor.audit_anchor_seq}); recorded in runner.start`);
  }
  // The file ledger in the state dir, or Redis (SKILL_MCP_REDIS_URL) shared with other runners.
  const ledgers = await openLedger({ env, stateDir: opts.stateDir, auditPath: opts.auditPath, audit, log });
  const { ledger } = ledgers;
  const uidPool = asRoot
    ? new UidPool(opts.uidRange, [0, process.getuid!(), ...(opts.frontUid !== undefined ? [opts.frontUid] : [])], new UidClaims(env['SKILL_MCP_UID_CLAIM_DIR'] || DEFAULT_CLAIM_DIR))
    : undefined;
  // Root tries the sandbox as a real run uid: what must work is bubblewrap as that uid.
  const probeUid = uidPool?.takeOrUndefined();
  const platform = probePlatform({ searchPath: env['PATH'], bwrapSetting: opts.bwrap, probeUid, tmpBytes: opts.limits.tmpBytes });
  if (probeUid !== undefined) uidPool?.release(probeUid);
  if (platform.missing.length > 0 && platform.isolation !== 'namespace') log(`isolation ${platform.isolation}: ${platform.missing.join('; ')} (skill-mcp doctor says more)`);
  const { limits } = settings;

  let refusedWhy: { code: ErrorCode; message: string } | undefined;
  if (platform.refuseWhy) refusedWhy = { code: 'SANDBOX_UNAVAILABLE', message: platform.refuseWhy };
  else if (!environ.scrubbed && hosted && !settings.allowUnscrubbed) {
    refusedWhy = { code: 'ENVIRON_UNSCRUBBED', message: 'hosted runner could not clear its environ, so no script runs (environ-unscrubbed); the owner may set MCP_SKILL_ALLOW_UNSCRUBBED=1' };
  }
  if (!environ.scrubbed) log(`warning: ${environ.detail ?? 'environ not scrubbed'}`);

  // Each run holds a uid of its own as root: never more runs at once than the range has uids.
  const uidCount = asRoot ? opts.uidRange.last - opts.uidRange.first + 1 : undefined;
  if (opts.maxRuns !== undefined && uidCount !== undefined && opts.maxRuns > uidCount) {
    throw new SkillMcpError('BAD_REQUEST', `SKILL_MCP_MAX_RUNS=${opts.maxRuns} is more than the ${uidCount} uids of SKILL_MCP_UID_RANGE; each run needs a uid of its own`);
  }
  const capacity = resolveCapacity({ maxRuns: opts.maxRuns, perClient: opts.runsPerClient, perRunBytes: opts.limits.memoryBytes + opts.limits.tmpBytes, hosted, uidCount }, thisMachine());

  const peer = loadPeerCredReader();
  if ('why' in peer) log(`warning: no peer-credential check (${peer.why}); relying on socket directory modes`);
  const service = new RunnerService({
    ctx: { env, bundledSkills: options.bundledSkills, limits, platform, memoryBytes: opts.limits.memoryBytes },
    key, ledger, audit, environ, refusedWhy, ttlMs: settings.confirmTtlSeconds * 1000, scratchDir: opts.scratchDir, uidPool,
    limits: opts.limits, killGraceMs: opts.killGraceMs, drainMs: opts.drainMs,
    admission: { maxRuns: capacity.maxRuns, perClient: capacity.perClient, queueMs: opts.runQueueMs },
  });
  const mismatchesLogged = new Set<string>();
  const server = await listen({
    socketPath: opts.socketPath, frontUid: opts.frontUid, frontGid: opts.frontGid, peerCred: 'read' in peer ? peer.read : undefined, service, audit,
    frontSecret, view: () => configView(env, options.bundledSkills), maxRunConnections: service.maxRunConnections,
    onMismatch: (differs) => {
      const key = differs.join(',');
      if (mismatchesLogged.has(key)) return;
      mismatchesLogged.add(key);
      log(`a front's configuration differs from this runner's (${differs.join(', ')}); its prepare/run requests are refused CONFIG_MISMATCH. This runner serves ${hosted ? 'hosted' : 'standalone'}, skill folders ${realRoots(env, options.bundledSkills).join(':')}, grant from ${grantFrom(settings.grant)}: give it the same MCP_SKILLS_PATH (or SKILLS_DIR) and MCP_SKILL_RUN as the front`);
    },
  });
  audit.append({
    event: 'runner.start', pid: process.pid, uid: process.getuid?.(), isolation: platform.isolation, sandbox: platform.mechanisms, environ_scrubbed: environ.scrubbed,
    hosted, runs_refused: refusedWhy?.code ?? null, grant_from: grantFrom(settings.grant), key_source: keySource === 'secret' ? `secret-${confirmSecret.from}` : keySource,
    interpreters: Object.fromEntries([...platform.interpreters].map(([name, r]) => [name, 'path' in r])),
    max_runs: capacity.maxRuns, max_runs_from: capacity.maxRunsFrom, runs_per_client: capacity.perClient, run_queue_ms: opts.runQueueMs,
    peer_check: 'read' in peer, front_secret: opts.frontSecret?.from ?? 'none', inherited_fds_closed: fdsClosed, scratch_stale_removed: stale.removed, scratch_stale_failed: stale.failed,
    ...anchor, ...ledgers.startFields,
  });
  log(`ready on ${opts.socketPath} (isolation ${platform.isolation}; ${capacity.maxRuns} run(s) at once, ${capacity.perClient} per client${refusedWhy ? `; runs refused: ${refusedWhy.code}` : ''})`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close();
    void service.stop().then(() => ledgers.close()).finally(() => {
      audit.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // Standalone: the guard's pipe closing means the front is gone; nothing may outlive it.
  if (env['SKILL_MCP_RUNNER_EXIT_WITH_STDIN'] === '1') {
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    process.stdin.resume();
    if (process.stdin.readableEnded) stop();
  }
}
