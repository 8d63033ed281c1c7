/**
 * @module The runner's command line and `SKILL_MCP_*` variables (documented in SECURITY.md).
 * Flags win over variables. A malformed value stops the runner with a message: a typo must never
 * silently widen who may connect or what a script may use.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SkillMcpError } from '../shared/errors.js';
import type { SandboxLimits } from './sandbox.js';
import { DEFAULT_UID_RANGE, parseUidRange } from './uids.js';
import { MIN_MEMORY_BYTES } from '../shared/declaration.js';
import { DEFAULT_RUN_QUEUE_MS, MAX_RUN_QUEUE_MS } from '../shared/limits.js';

export interface RunnerOptions {
  socketPath: string;
  stateDir: string;
  scratchDir: string;
  auditPath: string;
  frontUid: number | undefined;
  frontGid: number | undefined;
  uidRange: { first: number; last: number };
  ttlMs: number;
  limits: SandboxLimits;
  /** `SKILL_MCP_BWRAP`: bubblewrap's path, or `off`; unset looks in the system folders. */
  bwrap: string | undefined;
  killGraceMs: number;
  drainMs: number;
  /** Where the front secret comes from: the guard's pipe (standalone), an operator's file, or nowhere. */
  frontSecret: { from: 'stdin' } | { from: 'file'; path: string } | undefined;
  /** `SKILL_MCP_MAX_RUNS`: runs at once; unset (or `auto`) lets run-capacity.ts choose from the machine. */
  maxRuns: number | undefined;
  /** `SKILL_MCP_RUNS_PER_CLIENT`: one client's share of the slots; unset: half hosted, all standalone. */
  runsPerClient: number | undefined;
  /** `SKILL_MCP_RUN_QUEUE_MS`: how long a run over the limit waits for a slot before BUSY. */
  runQueueMs: number;
}

export const RUNNER_USAGE = `usage: skill-mcp runner --socket PATH --state-dir DIR [options]
  --socket PATH         unix socket to listen on (SKILL_MCP_RUNNER_SOCKET); its directory is created 0750/0700
  --state-dir DIR       token key, spent-token ledger, audit log (SKILL_MCP_STATE_DIR); created 0700
  --front-uid UID       uid of the front allowed to connect (SKILL_MCP_FRONT_UID)
  --front-gid GID       group owning the socket directory and socket (SKILL_MCP_FRONT_GID)
  --uid-range A-B       run uids when root (SKILL_MCP_UID_RANGE, default ${DEFAULT_UID_RANGE})
  --scratch-dir DIR     parent of each run's private HOME/TMPDIR (SKILL_MCP_SCRATCH_DIR)
  --audit-log FILE      audit log path (SKILL_MCP_AUDIT_LOG, default STATE_DIR/audit.log)
  --max-runs N          runs at once (SKILL_MCP_MAX_RUNS; default from the machine's cores and
                        memory against the per-run memory cap, see docs/isolation.md)
  --runs-per-client N   slots one client (bearer token, stdio session) may hold at once
                        (SKILL_MCP_RUNS_PER_CLIENT; default half of --max-runs hosted, all standalone)
  --front-secret-file FILE
                        a secret (one line, 32+ characters, not world-readable) every front
                        connection must present; give the front the same file as
                        SKILL_MCP_FRONT_SECRET_FILE (SKILL_MCP_FRONT_SECRET_FILE)
  --front-secret-stdin  read that secret as the first line of stdin (how a standalone launcher
                        hands its runner a per-instance secret)

Sandbox variables (docs/isolation.md): SKILL_MCP_BWRAP (bubblewrap's path, or "off"),
SKILL_MCP_RUN_MEMORY_BYTES (default 1 GiB per run), SKILL_MCP_RUN_TMP_BYTES (private /tmp, default
256 MiB), SKILL_MCP_RUN_NPROC, SKILL_MCP_RUN_FSIZE_BYTES, SKILL_MCP_RUN_NOFILE.
SKILL_MCP_RUN_QUEUE_MS: how long a run over the limit waits for a slot before BUSY (default
${DEFAULT_RUN_QUEUE_MS}, at most ${MAX_RUN_QUEUE_MS}).

The runner reads the skills and the grant itself: give it the same MCP_SKILLS_PATH (or
SKILLS_DIR) and MCP_SKILL_RUN as the front, or every run is refused CONFIG_MISMATCH.
Example (hosted, as root):
  MCP_SKILLS_PATH=/srv/skills MCP_SKILL_RUN='[...]' skill-mcp runner \\
    --socket /run/skill-mcp/runner.sock --state-dir /var/lib/skill-mcp --front-uid 990 --front-gid 990`;

const FLAGS: Record<string, string> = {
  '--socket': 'SKILL_MCP_RUNNER_SOCKET',
  '--state-dir': 'SKILL_MCP_STATE_DIR',
  '--front-uid': 'SKILL_MCP_FRONT_UID',
  '--front-gid': 'SKILL_MCP_FRONT_GID',
  '--uid-range': 'SKILL_MCP_UID_RANGE',
  '--scratch-dir': 'SKILL_MCP_SCRATCH_DIR',
  '--audit-log': 'SKILL_MCP_AUDIT_LOG',
  '--front-secret-file': 'SKILL_MCP_FRONT_SECRET_FILE',
  '--max-runs': 'SKILL_MCP_MAX_RUNS',
  '--runs-per-client': 'SKILL_MCP_RUNS_PER_CLIENT',
};

/** Most runs at once a runner accepts to be configured with (each holds a connection, a uid, a scratch folder). */
export const MAX_RUNS_LIMIT = 1024;

function bad(message: string): never {
  throw new SkillMcpError('BAD_REQUEST', message);
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || value > max) bad(`${name}=${JSON.stringify(raw)} must be an integer from ${min} to ${max}`);
  return value;
}

function optionalInt(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  return raw === undefined || raw === '' ? undefined : int(name, raw, min, min, max);
}

/** The primary gid of `uid` from /etc/passwd, so `--front-uid` alone can own the socket directory. */
function primaryGid(uid: number): number | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (Number(f[2]) === uid && f[3] !== undefined) return Number(f[3]);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export function parseRunnerOptions(argv: string[], env: Readonly<Record<string, string | undefined>>): RunnerOptions {
  const values: Record<string, string | undefined> = {};
  for (const variable of Object.values(FLAGS)) values[variable] = env[variable];
  let secretOnStdin = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--front-secret-stdin') {
      secretOnStdin = true;
      continue;
    }
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const variable = FLAGS[flag];
    if (!variable) bad(`unknown option ${JSON.stringify(flag)}\n${RUNNER_USAGE}`);
    const value = inline ?? argv[++i];
    if (value === undefined) bad(`${flag} needs a value`);
    values[variable] = value;
  }
  const socket = values['SKILL_MCP_RUNNER_SOCKET'];
  const state = values['SKILL_MCP_STATE_DIR'];
  if (!socket || !state) bad(`--socket and --state-dir are required\n${RUNNER_USAGE}`);
  const stateDir = resolve(state);
  const frontUid = values['SKILL_MCP_FRONT_UID'] ? int('SKILL_MCP_FRONT_UID', values['SKILL_MCP_FRONT_UID'], 0, 1, 2 ** 31 - 1) : undefined;
  let frontGid = values['SKILL_MCP_FRONT_GID'] ? int('SKILL_MCP_FRONT_GID', values['SKILL_MCP_FRONT_GID'], 0, 1, 2 ** 31 - 1) : undefined;
  if (frontUid !== undefined && frontGid === undefined) {
    frontGid = primaryGid(frontUid) ?? bad(`--front-uid ${frontUid} has no passwd entry; pass --front-gid too`);
  }
  const secretFile = values['SKILL_MCP_FRONT_SECRET_FILE'];
  if (secretOnStdin && secretFile) bad('--front-secret-stdin and --front-secret-file (SKILL_MCP_FRONT_SECRET_FILE) exclude each other');
  const ttlSeconds = int('MCP_CONFIRM_TTL_SECONDS', env['MCP_CONFIRM_TTL_SECONDS'], 600, 1, 7 * 24 * 3600);
  return {
    socketPath: resolve(socket),
    stateDir,
    scratchDir: resolve(values['SKILL_MCP_SCRATCH_DIR'] || join(tmpdir(), `skill-mcp-scratch-${process.getuid?.() ?? 0}`)),
    auditPath: resolve(values['SKILL_MCP_AUDIT_LOG'] || join(stateDir, 'audit.log')),
    frontUid,
    frontGid,
    uidRange: parseUidRange(values['SKILL_MCP_UID_RANGE'] || DEFAULT_UID_RANGE),
    ttlMs: ttlSeconds * 1000,
    limits: {
      nproc: int('SKILL_MCP_RUN_NPROC', env['SKILL_MCP_RUN_NPROC'], 64, 8, 4096),
      fsizeBytes: int('SKILL_MCP_RUN_FSIZE_BYTES', env['SKILL_MCP_RUN_FSIZE_BYTES'], 64 * 1024 * 1024, 1024, 2 ** 40),
      nofile: int('SKILL_MCP_RUN_NOFILE', env['SKILL_MCP_RUN_NOFILE'], 256, 16, 65536),
      memoryBytes: int('SKILL_MCP_RUN_MEMORY_BYTES', env['SKILL_MCP_RUN_MEMORY_BYTES'], 1024 ** 3, MIN_MEMORY_BYTES, 2 ** 44),
      tmpBytes: int('SKILL_MCP_RUN_TMP_BYTES', env['SKILL_MCP_RUN_TMP_BYTES'], 256 * 1024 * 1024, 1024 * 1024, 2 ** 40),
    },
    bwrap: env['SKILL_MCP_BWRAP'] || undefined,
    killGraceMs: int('SKILL_MCP_KILL_GRACE_MS', env['SKILL_MCP_KILL_GRACE_MS'], 2000, 0, 60_000),
    drainMs: int('SKILL_MCP_DRAIN_MS', env['SKILL_MCP_DRAIN_MS'], 500, 0, 60_000),
    frontSecret: secretOnStdin ? { from: 'stdin' } : secretFile ? { from: 'file', path: resolve(secretFile) } : undefined,
    maxRuns: values['SKILL_MCP_MAX_RUNS'] === 'auto' ? undefined : optionalInt('SKILL_MCP_MAX_RUNS', values['SKILL_MCP_MAX_RUNS'], 1, MAX_RUNS_LIMIT),
    runsPerClient: optionalInt('SKILL_MCP_RUNS_PER_CLIENT', values['SKILL_MCP_RUNS_PER_CLIENT'], 1, MAX_RUNS_LIMIT),
    runQueueMs: int('SKILL_MCP_RUN_QUEUE_MS', env['SKILL_MCP_RUN_QUEUE_MS'], DEFAULT_RUN_QUEUE_MS, 0, MAX_RUN_QUEUE_MS),
  };
}
