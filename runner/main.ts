/**
 * @module `skill-mcp runner`: the privileged daemon (docs/architecture.md §8). Start-up order matters and is:
 * close inherited fds → keep a private copy of the environment → scrub /proc/self/environ →
 * state dir, scratch dir (removing crashed runs' folders), token key, ledger (spent-token markers,
 * an old single-file ledger migrated), audit log (checked against its anchor, under the audit lock
 * other runners on this state dir share, before anything is appended) → probe interpreters and sandbox tools → listen.
 * SIGTERM/SIGINT kill any current run, close the socket and exit.
 */
import { readCatalogLimits } from '../shared/limits.js';
import { isHosted } from '../shared/mode.js';
import { readGrantSource, grantFrom } from '../shared/grant.js';
import type { ErrorCode } from '../shared/errors.js';
import { configView, realRoots } from '../shared/config-view.js';
import { readFrontSecretFile } from '../shared/front-secret.js';
import { anchorPathIn } from './audit-anchor.js';
import { AuditLog } from './audit-log.js';
import { readFrontSecretLine } from './front-auth.js';
import { closeInheritedFds, scrubEnviron } from './hygiene.js';
import { openLedger } from './ledger-select.js';
import { parseRunnerOptions, RUNNER_USAGE } from './options.js';
import { loadPeerCredReader } from './peer-cred.js';
import { probePlatform } from './platform.js';
import { listen } from './server.js';
import { removeStaleRunFolders } from './scratch.js';
import { RunnerService } from './service.js';
import { ensurePrivateDir, loadTokenKey } from './state.js';
import { DEFAULT_CLAIM_DIR, UidClaims } from './uid-claims.js';
import { UidPool } from './uids.js';

function log(message: string): void {
  process.stderr.write(`skill-mcp runner: ${message}\n`);
}

export async function runnerMain(argv: string[], options: { bundledSkills: string }): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${RUNNER_USAGE}\n`);
    return;
  }
  const fdsClosed = closeInheritedFds();
  // Security: files the runner creates (state, scratch) are private unless made otherwise.
  process.umask(0o077);
  // The private copy: granted values are read from here; process.env is what gets scrubbed.
  const env: Record<string, string | undefined> = { ...process.env };
  const opts = parseRunnerOptions(argv, env);
  const environ = scrubEnviron(process.env);
  const hosted = isHosted(env);
  // Read before listening: no connection is served by a runner that does not know its front yet.
  const frontSecret = opts.frontSecret?.from === 'stdin' ? await readFrontSecretLine(process.stdin) : opts.frontSecret ? readFrontSecretFile(opts.frontSecret.path) : undefined;

  ensurePrivateDir(opts.stateDir);
  const asRoot = process.getuid?.() === 0;
  // Root: the scratch parent must be traversable by run uids (each run's own dir is 0700, theirs).
  ensurePrivateDir(opts.scratchDir, asRoot ? 0o711 : 0o700);
  // A crashed predecessor's run folders (a script's HOME, maybe secrets it wrote) go before any run.
  const stale = removeStaleRunFolders(opts.scratchDir);
  if (stale.failed > 0) log(`warning: ${stale.failed} stale run folder(s) under the scratch directory could not be removed`);
  const { key, source: keySource } = loadTokenKey(opts.stateDir, env['MCP_CONFIRM_SECRET']);
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
  const { limits, errors } = readCatalogLimits(env);
  for (const error of errors) log(error);

  let refusedWhy: { code: ErrorCode; message: string } | undefined;
  if (platform.refuseWhy) refusedWhy = { code: 'SANDBOX_UNAVAILABLE', message: platform.refuseWhy };
  else if (!environ.scrubbed && hosted && env['MCP_SKILL_ALLOW_UNSCRUBBED'] !== '1') {
    refusedWhy = { code: 'ENVIRON_UNSCRUBBED', message: 'hosted runner could not clear its environ, so no script runs (environ-unscrubbed); the owner may set MCP_SKILL_ALLOW_UNSCRUBBED=1' };
  }
  if (!environ.scrubbed) log(`warning: ${environ.detail ?? 'environ not scrubbed'}`);

  const peer = loadPeerCredReader();
  if ('why' in peer) log(`warning: no peer-credential check (${peer.why}); relying on socket directory modes`);
  const service = new RunnerService({
    ctx: { env, bundledSkills: options.bundledSkills, limits, platform, memoryBytes: opts.limits.memoryBytes },
    key, ledger, audit, environ, refusedWhy, ttlMs: opts.ttlMs, scratchDir: opts.scratchDir, uidPool,
    limits: opts.limits, killGraceMs: opts.killGraceMs, drainMs: opts.drainMs,
  });
  const mismatchesLogged = new Set<string>();
  const server = await listen({
    socketPath: opts.socketPath, frontUid: opts.frontUid, frontGid: opts.frontGid, peerCred: 'read' in peer ? peer.read : undefined, service, audit,
    frontSecret, view: () => configView(env, options.bundledSkills),
    onMismatch: (differs) => {
      const key = differs.join(',');
      if (mismatchesLogged.has(key)) return;
      mismatchesLogged.add(key);
      log(`a front's configuration differs from this runner's (${differs.join(', ')}); its prepare/run requests are refused CONFIG_MISMATCH. This runner serves ${hosted ? 'hosted' : 'standalone'}, skill folders ${realRoots(env, options.bundledSkills).join(':')}, grant from ${grantFrom(readGrantSource(env))}: give it the same MCP_SKILLS_PATH (or SKILLS_DIR) and MCP_SKILL_RUN as the front`);
    },
  });
  audit.append({
    event: 'runner.start', pid: process.pid, uid: process.getuid?.(), isolation: platform.isolation, sandbox: platform.mechanisms, environ_scrubbed: environ.scrubbed,
    hosted, runs_refused: refusedWhy?.code ?? null, grant_from: grantFrom(readGrantSource(env)), key_source: keySource,
    interpreters: Object.fromEntries([...platform.interpreters].map(([name, r]) => [name, 'path' in r])),
    peer_check: 'read' in peer, front_secret: opts.frontSecret?.from ?? 'none', inherited_fds_closed: fdsClosed, scratch_stale_removed: stale.removed, scratch_stale_failed: stale.failed,
    ...anchor, ...ledgers.startFields,
  });
  log(`ready on ${opts.socketPath} (isolation ${platform.isolation}${refusedWhy ? `; runs refused: ${refusedWhy.code}` : ''})`);

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
