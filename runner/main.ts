/**
 * @module `skill-mcp runner`: the privileged daemon (docs/architecture.md §8). Start-up order matters and is:
 * close inherited fds → keep a private copy of the environment → the syscall filter's built programs
 * (refused to start without them) → scrub /proc/self/environ →
 * state dir, scratch dir (removing crashed runs' folders), token key, ledger (spent-token markers,
 * an old single-file ledger migrated), audit log (checked against its anchor, under the audit lock
 * other runners on this state dir share, before anything is appended) → probe interpreters and sandbox tools → listen.
 * SIGTERM/SIGINT kill every run (waiting ones too), close the socket, wait (bounded) for the runs'
 * folders to be removed, and exit.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { loadAuditSigner } from './audit/signing.js';
import { createHash } from 'node:crypto';
import { userInfo } from 'node:os';
import { readFrontSecretLine } from './requests/front-auth.js';
import { closeInheritedFds, scrubEnviron } from './hygiene.js';
import { openLedger } from './ledger/select.js';
import { readRedisSettings } from './redis/options.js';
import { parseRunnerOptions, RUNNER_USAGE } from './options.js';
import { loadPeerCredReader } from './requests/peer-cred.js';
import { joinFreshSessionKeyring } from './sandbox/keyring.js';
import { loadHostPrograms } from './sandbox/seccomp-programs.js';
import { sweepRunCgroups } from './sandbox/run-cgroup.js';
import { loadPidfdKiller } from './sandbox/pidfd.js';
import { pidAlive } from './file-lock.js';
import { fileURLToPath } from 'node:url';
import { probePlatform, usesBwrap } from './sandbox/platform.js';
import { helperPoolFor } from './egress/helper-link.js';
import { LocalWalks } from './workspace/local-walk.js';
import { WalkerPool } from './workspace/walk-link.js';
import { LocalBackend } from './backend/local.js';
import { bridgeNode } from './egress/plan.js';
import { installBundles, removeBundles } from './sandbox/bundles.js';
import { GO_AHEAD_OFF } from './sandbox/go-ahead.js';
import { onSpawnFallback, probePosixSpawn, spawnFallbackCount } from './sandbox/posix-spawn.js';
import { listen } from './requests/server.js';
import { chooseScratchDir, removeStaleRunFolders, runFolderName, sharedAncestor, staleSandboxes } from './workspace/scratch.js';
import { probeWorkspaceMount } from './workspace/mount.js';
import { RunnerService } from './requests/service.js';
import { resolveCapacity, thisMachine } from './requests/capacity.js';
import { SkillMcpError } from '../shared/errors.js';
import { debugLine, lineWriter, readLogFormat } from '../shared/log-line.js';
import { ensurePrivateDir, loadTokenKey } from './state.js';
import { envsDirOf, stateDirMode } from './deps/store.js';
import { stateDirProblem } from '../shared/state-dir.js';
import { dataBaseOf } from '../shared/data.js';
import { Identities } from './deps/identity.js';
import { readExplicitIndex } from './deps/index-settings.js';
import { EnvVerifier } from './deps/verify.js';
import { DEFAULT_CLAIM_DIR, UidClaims } from './uids/claims.js';
import { UidPool } from './uids/pool.js';
import { HashWorker } from '../shared/hash-worker.js';
import { rootReads } from '../shared/open-beneath.js';
import { FolderListings } from '../shared/folder-listing.js';
import { SkillMdMemo } from './requests/skill-md-memo.js';

/** What the model is told of a state folder the run uids cannot reach (no host path; the runner's log and doctor name it). */
const STATE_UNREACHABLE =
  "they are kept in the runner's state folder, which a folder on its way keeps the run uids out of; the operator sees which in the runner's log and in `skill-mcp doctor`, and moves the state folder (SKILL_MCP_STATE_DIR) or makes that folder traversable";

/** One line on stderr, as text or JSON (SKILL_MCP_LOG_FORMAT; an unreadable value keeps text). */
function log(message: string): void {
  lineWriter('runner', 'skill-mcp runner', readLogFormat(process.env)).say(message);
}

/** An internal note: on stderr only with SKILL_MCP_LOG_LEVEL=debug (shared/log-line.ts). */
function debug(message: string): void {
  debugLine(process.env, 'runner', 'skill-mcp runner')(message);
}

/** The runner's configuration as one sha256 (canonical JSON, keys sorted): equal digests, equal configurations. */
function configDigest(config: Record<string, unknown>): string {
  const canonical = (value: unknown): unknown =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
        )
      : Array.isArray(value)
        ? value.map(canonical)
        : value;
  return createHash('sha256')
    .update(JSON.stringify(canonical(config)))
    .digest('hex');
}

/** The OS user this runner runs as: standalone, the person whose skill-mcp started it (the requester of its runs). */
function osUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid:${process.getuid?.() ?? '?'}`;
  }
}

/**
 * Tests only (SKILL_MCP_TEST_AUDIT_KILL_AT=rotate-next-written|rotate-renamed): SIGKILL this runner at
 * that point of an audit rotation, to prove no line is lost when a crash lands there.
 */
function testKillAt(point: string | undefined): ((at: string) => void) | undefined {
  if (point === undefined || point === '') return undefined;
  return (at) => {
    if (at === point) process.kill(process.pid, 'SIGKILL');
  };
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
  // Security: the syscall filter's programs, compiled at build time (dist/seccomp/). Missing or
  // malformed, the runner does not start (SANDBOX_UNAVAILABLE), before it touches any state,
  // rather than run scripts unfiltered.
  const programs = loadHostPrograms();
  for (const line of startupReport(settings)) log(line);
  const environ = scrubEnviron(process.env);
  const hosted = settings.hosted;
  // Read before listening: no connection is served by a runner that does not know its front yet.
  const frontSecret =
    opts.frontSecret?.from === 'stdin'
      ? await readFrontSecretLine(process.stdin)
      : opts.frontSecret
        ? readFrontSecretFile(opts.frontSecret.path)
        : undefined;

  // Root: traversable by run uids (nothing listable; every file is private by its own mode), so a
  // run reaches its environment in envs/ (runner/deps/store.ts).
  ensurePrivateDir(opts.stateDir, stateDirMode());
  const asRoot = process.getuid?.() === 0;
  // Said at start, and the answer to every run that needs an environment: a root runner's run uids
  // must reach the environments in its state folder (shared/state-dir.ts).
  const stateProblem = stateDirProblem(opts.stateDir, opts.stateFrom, asRoot);
  if (stateProblem !== undefined) log(`error: ${stateProblem} Until then, skills with requirements cannot run.`);
  // Root: the scratch parent must be traversable by run uids (each run's own dir is 0700, theirs).
  const scratchMode = asRoot ? 0o711 : 0o700;
  let scratchDir = opts.scratchDir;
  if (opts.scratchExplicit) ensurePrivateDir(scratchDir, scratchMode);
  else {
    // Security: never a shared name in the temp folder another user could take first (or plant
    // node_modules above): root's /run, a user's state directory, else a fresh random name.
    const choice = chooseScratchDir(asRoot ? ['/run/skill-mcp-scratch'] : [opts.scratchDir], tmpdir(), scratchMode);
    for (const refused of choice.refused) log(`warning: scratch directory ${refused}; using another`);
    scratchDir = choice.dir;
  }
  const shared = sharedAncestor(scratchDir);
  if (shared !== undefined)
    log(
      `warning: the scratch directory is below ${shared}, which other users may write to: without bubblewrap, require() from a run's copy also looks for node_modules there (use --scratch-dir below a folder only you and root can write)`,
    );
  // A crashed predecessor's sandboxes (one waiting at the go-ahead never ends by itself), then its
  // run folders (a script's HOME, maybe secrets it wrote), before any run.
  const staleBoxes = staleSandboxes(scratchDir);
  if (staleBoxes.length > 0) {
    const killer = loadPidfdKiller();
    const killed = killer ? staleBoxes.filter((p) => killer.kill(p.pid, p.uid)).length : 0;
    log(
      `killed ${killed} of ${staleBoxes.length} sandbox process(es) a dead runner left${killer ? '' : ' (no pidfds here to kill them safely)'}`,
    );
  }
  const stale = removeStaleRunFolders(scratchDir);
  if (stale.failed > 0) log(`warning: ${stale.failed} stale run folder(s) under the scratch directory could not be removed`);
  const confirmSecret = readConfirmSecret(env);
  const { key, source: keySource } = loadTokenKey(opts.stateDir, 'secret' in confirmSecret ? confirmSecret.secret : undefined);
  const audit = new AuditLog({
    path: opts.auditPath,
    anchorPath: anchorPathIn(opts.stateDir),
    signer: loadAuditSigner(opts.stateDir),
    maxBytes: opts.auditMaxBytes > 0 ? opts.auditMaxBytes : undefined,
    keep: opts.auditKeep > 0 ? opts.auditKeep : undefined,
    fault: testKillAt(env['SKILL_MCP_TEST_AUDIT_KILL_AT']),
    warn: log,
  });
  const anchor = audit.anchorFinding;
  if (anchor.audit_anchor === 'truncated' || anchor.audit_anchor === 'replaced') {
    log(
      `warning: the audit log does not match its anchor (${anchor.audit_anchor}: the log ends at seq ${anchor.audit_log_last_seq}, the runner last wrote seq ${anchor.audit_anchor_seq}); recorded in runner.start`,
    );
  }
  // Read first: a malformed Redis setting stops the runner before anything else happens. The
  // ledger itself is opened once the link's bundle is installed (below).
  const redisWanted = readRedisSettings(env, opts.auditPath) !== undefined;
  const uidPool = asRoot
    ? new UidPool(
        opts.uidRange,
        [0, process.getuid!(), ...(opts.frontUid !== undefined ? [opts.frontUid] : [])],
        new UidClaims(env['SKILL_MCP_UID_CLAIM_DIR'] || DEFAULT_CLAIM_DIR),
      )
    : undefined;
  // Root tries the sandbox as a real run uid: what must work is bubblewrap as that uid.
  const probeUid = await uidPool?.takeOrUndefined();
  // Security: the keys of the session the runner was started in are possessed by neither it nor its runs.
  const ownKeyring = joinFreshSessionKeyring();
  const probed = probePlatform({
    searchPath: env['PATH'],
    bwrapSetting: opts.bwrap,
    probeUid,
    tmpBytes: opts.limits.tmpBytes,
    ownKeyring,
    programs,
  });
  // How the workspace cap is kept (runner/workspace/capacity.ts): a tmpfs per run where root may mount one, else a watcher.
  const wsProbe = probeWorkspaceMount(join(scratchDir, runFolderName('0'.repeat(16))));
  const workspaceMode = wsProbe.ok ? 'tmpfs' : 'watch';
  if (asRoot && !wsProbe.ok)
    log(`warning: ${wsProbe.why}; each run's workspace size is kept by a watcher instead (approximate, docs/isolation.md)`);
  const platform = { ...probed, mechanisms: [...probed.mechanisms, wsProbe.ok ? 'workspace-tmpfs' : 'workspace-watch'] };
  if (probeUid !== undefined) await uidPool?.release(probeUid);
  if (platform.cgroups) {
    // Groups of runs whose runner died: their tasks are killed and the groups removed.
    const swept = await sweepRunCgroups(platform.cgroups, pidAlive);
    if (swept.removed + swept.left > 0)
      log(`removed ${swept.removed} run cgroup(s) a dead runner left${swept.left > 0 ? `; ${swept.left} could not be removed` : ''}`);
  }
  if (platform.missing.length > 0 && platform.isolation !== 'namespace')
    log(`isolation ${platform.isolation}: ${platform.missing.join('; ')} (skill-mcp doctor says more)`);
  const { limits } = settings;

  let refusedWhy: { code: ErrorCode; message: string } | undefined;
  if (platform.refuseWhy) refusedWhy = { code: 'SANDBOX_UNAVAILABLE', message: platform.refuseWhy };
  else if (!environ.scrubbed && hosted && !settings.allowUnscrubbed) {
    refusedWhy = {
      code: 'ENVIRON_UNSCRUBBED',
      message:
        'hosted runner could not clear its environ, so no script runs (environ-unscrubbed); the owner may set MCP_SKILL_ALLOW_UNSCRUBBED=1',
    };
  }
  if (!environ.scrubbed) log(`warning: ${environ.detail ?? 'environ not scrubbed'}`);

  // Each run holds a uid of its own as root: never more runs at once than the range has uids.
  // (The Redis link, when there is one, holds one of them for the runner's life.)
  const uidCount = asRoot ? opts.uidRange.last - opts.uidRange.first + 1 - (redisWanted ? 1 : 0) : undefined;
  if (opts.maxRuns !== undefined && uidCount !== undefined && opts.maxRuns > uidCount) {
    throw new SkillMcpError(
      'BAD_REQUEST',
      `SKILL_MCP_MAX_RUNS=${opts.maxRuns} is more than the ${uidCount} uids of SKILL_MCP_UID_RANGE; each run needs a uid of its own`,
    );
  }
  const capacity = resolveCapacity(
    {
      maxRuns: opts.maxRuns,
      perClient: opts.runsPerClient,
      perRunBytes: opts.limits.memoryBytes + opts.limits.tmpBytes + (workspaceMode === 'tmpfs' ? opts.limits.workspaceBytes : 0),
      hosted,
      uidCount,
    },
    thisMachine(),
  );

  const peer = loadPeerCredReader();
  if ('why' in peer) log(`warning: no peer-credential check (${peer.why}); relying on socket directory modes`);
  const reads = rootReads();
  // How runs are spawned (runner/sandbox/posix-spawn.ts): said when it is not posix_spawn, and a
  // single spawn that falls back is said the first time (all are counted in the stop line).
  const spawnPath = probePosixSpawn(env);
  if ('why' in spawnPath)
    debug(
      `runs are spawned by Node's child_process, not posix_spawn (${spawnPath.why}): each spawn forks the runner (a few ms more per run)`,
    );
  if (platform.limitsByWhy !== undefined && platform.limitsByWhy !== GO_AHEAD_OFF)
    debug(
      `in bubblewrap each run's rlimits are set by a prlimit step, one exec more per run (${platform.limitsByWhy}); otherwise the runner sets them on the waiting sandbox itself`,
    );
  onSpawnFallback((why, count) => {
    if (count === 1)
      debug(
        `a run was spawned by Node's child_process because posix_spawn could not be set up for it (${why}); later ones are counted in the runner.stop line, not said`,
      );
  });
  if (asRoot && reads.fallbackWhy !== undefined)
    log(
      `note: skill files are opened one folder at a time with O_NOFOLLOW, not with openat2 (${reads.fallbackWhy}); links are still never followed, mount points inside a skill are not refused`,
    );
  // What it starts under other uids besides scripts (runner/sandbox/bundles.ts): proxied runs'
  // network helpers (runner/egress/helper-link.ts) and, as root, each run's outputs walk
  // (runner/workspace/walk-link.ts); their bundles sit beside this one in dist/. A runner without
  // privilege runs the walk's code in its own process (runner/workspace/local-walk.ts).
  const bundles = installBundles(fileURLToPath(new URL('.', import.meta.url)), scratchDir);
  const helpers = helperPoolFor({ platform, scratchDir, uidPool, bundle: bundles['skill-mcp-helper.cjs'] });
  if ('why' in helpers && usesBwrap(platform))
    log(`warning: runs with egress or secrets are refused here: no network helper (${helpers.why})`);
  const walker = bundles['skill-mcp-walk.cjs'];
  const walk = !asRoot
    ? new LocalWalks(walker)
    : 'path' in walker && platform.tools.setpriv
      ? new WalkerPool({ setpriv: platform.tools.setpriv, node: bridgeNode(platform) ?? process.execPath, script: walker.path })
      : undefined;
  if (walk === undefined || 'why' in walker)
    log(
      `warning: runs return no files here, and a run with secret values returns no stdout or stderr: no outputs walker (${'why' in walker ? walker.why : 'no setpriv'})`,
    );
  // The file ledger in the state dir, or Redis (SKILL_MCP_REDIS_URL) shared with other runners,
  // spoken to by the Redis link process (runner/redis/link-main.ts): as root under a uid of its own.
  const redisBundle = bundles['skill-mcp-redis.cjs'];
  const ledgers = await openLedger({
    env,
    stateDir: opts.stateDir,
    auditPath: opts.auditPath,
    audit,
    log,
    redisLink: async () => {
      if ('why' in redisBundle) return redisBundle;
      const node = bridgeNode(platform) ?? process.execPath;
      if (!asRoot) return { command: node, args: [redisBundle.path] };
      const setpriv = platform.tools.setpriv;
      if (setpriv === undefined) return { why: 'no util-linux setpriv to give it a uid of its own' };
      const uid = await uidPool!.takeOrUndefined();
      if (uid === undefined) return { why: 'no free uid in SKILL_MCP_UID_RANGE for it' };
      return {
        command: setpriv,
        args: [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--no-new-privs', '--', node, redisBundle.path],
        release: () => uidPool!.release(uid),
      };
    },
  });
  const { ledger } = ledgers;
  const service = new RunnerService({
    ctx: {
      env,
      bundledSkills: options.bundledSkills,
      limits,
      platform,
      memoryBytes: opts.limits.memoryBytes,
      hasher: new HashWorker(),
      listings: new FolderListings(),
      skillMd: new SkillMdMemo(),
      data: { hostBase: Boolean(env['MCP_DATA_DIR']), quota: opts.data.quota },
      deps: {
        envsDir: envsDirOf(opts.stateDir),
        identities: new Identities(),
        verifier: new EnvVerifier(),
        index: readExplicitIndex(env),
        ...(stateProblem !== undefined ? { unreachable: STATE_UNREACHABLE } : {}),
      },
    },
    key,
    ledger,
    audit,
    environ,
    refusedWhy,
    ttlMs: settings.confirmTtlSeconds * 1000,
    scratchDir,
    uidPool,
    limits: opts.limits,
    workspaceMode,
    killGraceMs: opts.killGraceMs,
    drainMs: opts.drainMs,
    admission: { maxRuns: capacity.maxRuns, perClient: capacity.perClient, queueMs: opts.runQueueMs },
    osUser: hosted ? undefined : osUserName(),
    helpers: 'why' in helpers ? undefined : helpers,
    walk,
    data: {
      base: dataBaseOf(env, opts.stateDir),
      ...(asRoot ? { gids: opts.data.gids } : {}),
      ...(ledgers.dataTurns ? { shared: ledgers.dataTurns } : {}),
    },
    backend: new LocalBackend({
      platform,
      sourceEnv: env,
      limits: opts.limits,
      workspaceMode,
      killGraceMs: opts.killGraceMs,
      drainMs: opts.drainMs,
    }),
  });
  const mismatchesLogged = new Set<string>();
  const server = await listen({
    socketPath: opts.socketPath,
    frontUid: opts.frontUid,
    frontGid: opts.frontGid,
    peerCred: 'read' in peer ? peer.read : undefined,
    service,
    audit,
    frontSecret,
    view: () => configView(env, options.bundledSkills),
    maxRunConnections: service.maxRunConnections,
    onMismatch: (differs) => {
      const key = differs.join(',');
      if (mismatchesLogged.has(key)) return;
      mismatchesLogged.add(key);
      log(
        `a front's configuration differs from this runner's (${differs.join(', ')}); its prepare/run requests are refused CONFIG_MISMATCH. This runner serves ${hosted ? 'hosted' : 'standalone'}, skill folders ${realRoots(env, options.bundledSkills).join(':')}, grant from ${grantFrom(settings.grant)}: give it the same MCP_SKILLS_PATH (or SKILLS_DIR), MCP_SKILL_RUN and SKILL_MCP_DECLARATIONS (same files) as the front`,
      );
    },
  });
  // One start line per runner, written before its first decided line (a runner that only answers
  // describes — every standalone session that lists skills starts one — adds nothing to the log).
  const config = {
    uid: process.getuid?.(),
    isolation: platform.isolation,
    sandbox: platform.mechanisms,
    environ_scrubbed: environ.scrubbed,
    hosted,
    runs_refused: refusedWhy?.code ?? null,
    grant_from: grantFrom(settings.grant),
    key_source: keySource === 'secret' ? `secret-${confirmSecret.from}` : keySource,
    interpreters: Object.fromEntries([...platform.interpreters].map(([name, r]) => [name, 'path' in r])),
    max_runs: capacity.maxRuns,
    max_runs_from: capacity.maxRunsFrom,
    runs_per_client: capacity.perClient,
    run_queue_ms: opts.runQueueMs,
    workspace_mode: workspaceMode,
    workspace_bytes: opts.limits.workspaceBytes,
    workspace_files: opts.limits.workspaceFiles,
    peer_check: 'read' in peer,
    spawn: 'spawner' in spawnPath ? 'posix_spawn' : 'child_process',
    front_secret: opts.frontSecret?.from ?? 'none',
    audit_max_bytes: opts.auditMaxBytes,
    audit_keep: opts.auditKeep,
  };
  const configSha256 = configDigest({ ...config, view: configView(env, options.bundledSkills) });
  const startedAt = Date.now();
  audit.begin(() => ({
    event: 'runner.start',
    pid: process.pid,
    ...config,
    config_sha256: configSha256,
    audit_key_id: audit.keyId,
    inherited_fds_closed: fdsClosed,
    scratch_stale_removed: stale.removed,
    scratch_stale_failed: stale.failed,
    ...anchor,
    ...ledgers.startFields,
  }));
  // The standalone launcher's own runner (its secret on stdin) is internal: the front says when it is ready.
  (opts.frontSecret?.from === 'stdin' ? debug : log)(
    `ready on ${opts.socketPath} (isolation ${platform.isolation}; ${capacity.maxRuns} run(s) at once, ${capacity.perClient} per client${refusedWhy ? `; runs refused: ${refusedWhy.code}` : ''})`,
  );

  // No spare helper or walker yet: the first is started by the first preview of a run that needs
  // it (RunnerService.prepare), the next after each run's answer.

  let stopping = false;
  let why = 'signal';
  // Every step is awaited in turn and a failed one is said on stderr: whatever happens, the audit
  // log is closed (runner.stop) and the process exits.
  const shutDown = async (): Promise<void> => {
    let removalsPending = 0;
    try {
      ({ removalsPending } = await service.stop());
      if (!('why' in helpers)) await helpers.close();
      walk?.close();
      removeBundles(scratchDir);
      await ledgers.close();
    } catch (error) {
      log(`stopping did not finish cleanly (${(error as Error).message}); closing the audit log and exiting anyway`);
    }
    await audit
      .close(() => ({
        event: 'runner.stop',
        pid: process.pid,
        config_sha256: configSha256,
        uptime_ms: Date.now() - startedAt,
        lines: audit.linesWritten,
        why,
        ...(removalsPending > 0 ? { removals_pending: removalsPending } : {}),
        ...(spawnFallbackCount() > 0 ? { spawn_fallbacks: spawnFallbackCount() } : {}),
      }))
      .catch((error: unknown) => log(`the audit log could not be closed cleanly (${(error as Error).message})`));
    process.exit(0);
  };
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close();
    // A signal handler cannot await; shutDown never rejects (it catches every step) and ends in exit.
    void shutDown();
  };
  process.on('SIGTERM', () => {
    why = 'SIGTERM';
    stop();
  });
  process.on('SIGINT', () => {
    why = 'SIGINT';
    stop();
  });
  // Standalone: the guard's pipe closing means the front is gone; nothing may outlive it.
  if (env['SKILL_MCP_RUNNER_EXIT_WITH_STDIN'] === '1') {
    const frontGone = (): void => {
      if (!stopping) why = 'front-gone';
      stop();
    };
    process.stdin.on('end', frontGone);
    process.stdin.on('close', frontGone);
    process.stdin.resume();
    if (process.stdin.readableEnded) frontGone();
  }
}
