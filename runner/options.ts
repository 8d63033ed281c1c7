/**
 * @module The runner's command line (`parseArgs`, shared/cli-args.ts) and its own `SKILL_MCP_*`
 * variables (documented in docs/security.md), read through the same schema machinery as the settings
 * both processes share (shared/settings.ts). Flags win over variables. A malformed value stops the
 * runner with a message: a typo must never silently widen who may connect or what a script may use.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { parseFlags, stringFlag, UsageError, type FlagSpec } from '../shared/cli-args.js';
import { MIN_MEMORY_BYTES } from '../shared/declaration.js';
import { stateDirOf, stateDirSource } from '../shared/state-dir.js';
import {
  ConfigError,
  readValue,
  readVariable,
  refuseToStart,
  wholeNumber,
  type SettingIssue,
  type VariableSpec,
} from '../shared/settings-schema.js';
import type { SandboxLimits } from './sandbox/spawn.js';
import { DEFAULT_UID_RANGE, parseUidRange } from './uids/pool.js';
import { SECRETS_DIR, SECRETS_SHARED } from './secrets/source.js';
import { egressCaFileProblem } from './secrets/trust.js';
import { DEFAULT_RUN_QUEUE_MS, MAX_RUN_QUEUE_MS } from '../shared/limits.js';
import { RUN_INPUT_BYTES, RUN_OUTPUT_FILES_BYTES } from '../shared/run-io.js';
import { DEFAULT_DATA_BYTES, DEFAULT_DATA_FILES, type DataQuota } from '../shared/data.js';
import { DEFAULT_WORKSPACE_BYTES, DEFAULT_WORKSPACE_FILES, MAX_WORKSPACE_FILES } from './workspace/capacity.js';

export interface RunnerOptions {
  socketPath: string;
  stateDir: string;
  /** Where the state folder was named: `--state-dir` or `SKILL_MCP_STATE_DIR` (for messages). */
  stateFrom: string;
  scratchDir: string;
  /** Whether `scratchDir` was given (flag or variable); otherwise main.ts picks the default (runner/workspace/scratch.ts). */
  scratchExplicit: boolean;
  auditPath: string;
  frontUid: number | undefined;
  frontGid: number | undefined;
  uidRange: { first: number; last: number };
  limits: SandboxLimits;
  /** `SKILL_MCP_BWRAP`: bubblewrap's path, or `off`; unset looks in the system folders. */
  bwrap: string | undefined;
  killGraceMs: number;
  drainMs: number;
  /** Where the front secret comes from: the guard's pipe (standalone), an operator's file, or nowhere. */
  frontSecret: { from: 'stdin' } | { from: 'file'; path: string } | undefined;
  /** `SKILL_MCP_MAX_RUNS`: runs at once; unset (or `auto`) lets runner/requests/capacity.ts choose from the machine. */
  maxRuns: number | undefined;
  /** `SKILL_MCP_RUNS_PER_CLIENT`: one client's share of the slots; unset: half hosted, all standalone. */
  runsPerClient: number | undefined;
  /** `SKILL_MCP_RUN_QUEUE_MS`: how long a run over the limit waits for a slot before BUSY. */
  runQueueMs: number;
  /** `SKILL_MCP_AUDIT_MAX_BYTES`: rotate the audit log's live segment before it passes this (0: never). */
  auditMaxBytes: number;
  /** `SKILL_MCP_AUDIT_KEEP`: rotated audit segments kept (0: all). */
  auditKeep: number;
  /** Data folders (runner/data/): the operator's quota (`SKILL_MCP_DATA_BYTES`, `_FILES`) and, as root, their gids (`SKILL_MCP_DATA_GID_RANGE`). */
  data: { quota: DataQuota; gids: { first: number; last: number } };
}

export const RUNNER_USAGE = `usage: skill-mcp runner --socket PATH --state-dir DIR [options]
  --socket PATH         unix socket to listen on (SKILL_MCP_RUNNER_SOCKET); its directory is created 0750/0700
  --state-dir DIR       token key, spent-token ledger, audit log (SKILL_MCP_STATE_DIR); created 0700
  --front-uid UID       uid of the front allowed to connect (SKILL_MCP_FRONT_UID)
  --front-gid GID       group owning the socket directory and socket (SKILL_MCP_FRONT_GID)
  --uid-range A-B       run uids when root (SKILL_MCP_UID_RANGE, default ${DEFAULT_UID_RANGE})
  --scratch-dir DIR     parent of each run's private HOME/TMPDIR and skill copy (SKILL_MCP_SCRATCH_DIR;
                        default: /run/skill-mcp-scratch as root, <state dir>/scratch otherwise)
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
256 MiB), SKILL_MCP_RUN_WORKSPACE_BYTES and SKILL_MCP_RUN_WORKSPACE_FILES (a run's workspace, default
256 MiB and 10000 entries), SKILL_MCP_RUN_NPROC, SKILL_MCP_RUN_FSIZE_BYTES, SKILL_MCP_RUN_NOFILE.
SKILL_MCP_RUN_QUEUE_MS: how long a run over the limit waits for a slot before BUSY (default
${DEFAULT_RUN_QUEUE_MS}, at most ${MAX_RUN_QUEUE_MS}).
Secrets (docs/secrets.md): SKILL_MCP_SECRET_<NAME> (a value, for callers without an identity),
SKILL_MCP_SECRETS_DIR (a folder: <NAME> files, and <subject>/<NAME> per verified identity; 0600,
owned by the runner's user), SKILL_MCP_SECRETS_SHARED (NAME,NAME: secrets whose operator value a
verified identity without its own may use).
Audit log (docs/audit.md): SKILL_MCP_AUDIT_MAX_BYTES rotates the log before its live segment passes
that size (default 0: never); SKILL_MCP_AUDIT_KEEP keeps that many rotated segments (default 0: all).

The runner reads the skills, the grant and the operator declarations itself: give it the same
MCP_SKILLS_PATH (or SKILLS_DIR), MCP_SKILL_RUN and SKILL_MCP_DECLARATIONS (with the same files)
as the front, or every run is refused CONFIG_MISMATCH.
Example (hosted, as root):
  MCP_SKILLS_PATH=/srv/skills MCP_SKILL_RUN='[...]' skill-mcp runner \\
    --socket /run/skill-mcp/runner.sock --state-dir /var/lib/skill-mcp --front-uid 990 --front-gid 990`;

/** The flags that stand in for a variable (flags win), and the switches; `--help` is answered before parsing. */
const FLAGS: Record<string, FlagSpec & { variable?: string }> = {
  socket: { type: 'string', variable: 'SKILL_MCP_RUNNER_SOCKET' },
  'state-dir': { type: 'string', variable: 'SKILL_MCP_STATE_DIR' },
  'front-uid': { type: 'string', variable: 'SKILL_MCP_FRONT_UID' },
  'front-gid': { type: 'string', variable: 'SKILL_MCP_FRONT_GID' },
  'uid-range': { type: 'string', variable: 'SKILL_MCP_UID_RANGE' },
  'scratch-dir': { type: 'string', variable: 'SKILL_MCP_SCRATCH_DIR' },
  'audit-log': { type: 'string', variable: 'SKILL_MCP_AUDIT_LOG' },
  'front-secret-file': { type: 'string', variable: 'SKILL_MCP_FRONT_SECRET_FILE' },
  'front-secret-stdin': { type: 'boolean' },
  'max-runs': { type: 'string', variable: 'SKILL_MCP_MAX_RUNS' },
  'runs-per-client': { type: 'string', variable: 'SKILL_MCP_RUNS_PER_CLIENT' },
};

/** Most runs at once a runner accepts to be configured with (each holds a connection, a uid, a scratch folder). */
export const MAX_RUNS_LIMIT = 1024;

/** A runner-only whole-number setting: malformed stops the runner (and a standalone launcher, before it starts one). */
function count(name: string, fallback: number, min: number, max: number): VariableSpec<number> {
  return { name, schema: wholeNumber(min, max), expected: `an integer from ${min} to ${max}`, fallback, policy: 'stop' };
}

/** Security: never 0, so a typo cannot admit (or leave) root as "the front". */
const unprivilegedId = (name: string): VariableSpec<number | undefined> => ({
  name,
  schema: wholeNumber(1, 2 ** 31 - 1),
  expected: `an unprivileged id (1 to ${2 ** 31 - 1})`,
  fallback: undefined,
  policy: 'stop',
});

/** The gids data folders get as root (runner/data/folder.ts): apart from the run uids, unnamed in /etc/group. */
export const DEFAULT_DATA_GID_RANGE = '60000-61183';

/** An id range setting (`FIRST-LAST`, uids/pool.ts parseUidRange): the run uids, the data folders' gids. */
const idRange = (name: string, fallback: string): VariableSpec<{ first: number; last: number }> => ({
  name,
  schema: z.string().transform((raw, ctx) => {
    try {
      return parseUidRange(raw);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'bad id range' });
      return z.NEVER;
    }
  }),
  expected: 'FIRST-LAST within 1000-65533',
  fallback: parseUidRange(fallback),
  policy: 'stop',
});
const UID_RANGE = idRange('SKILL_MCP_UID_RANGE', DEFAULT_UID_RANGE);
const DATA_GID_RANGE = idRange('SKILL_MCP_DATA_GID_RANGE', DEFAULT_DATA_GID_RANGE);

/** The variables only the runner reads (docs/security.md, "Runner options and variables"). */
export const RUNNER_VARIABLES = {
  nproc: count('SKILL_MCP_RUN_NPROC', 64, 8, 4096),
  fsizeBytes: count('SKILL_MCP_RUN_FSIZE_BYTES', 64 * 1024 * 1024, 1024, 2 ** 40),
  nofile: count('SKILL_MCP_RUN_NOFILE', 256, 16, 65536),
  memoryBytes: count('SKILL_MCP_RUN_MEMORY_BYTES', 1024 ** 3, MIN_MEMORY_BYTES, 2 ** 44),
  tmpBytes: count('SKILL_MCP_RUN_TMP_BYTES', 256 * 1024 * 1024, 1024 * 1024, 2 ** 40),
  workspaceBytes: count('SKILL_MCP_RUN_WORKSPACE_BYTES', DEFAULT_WORKSPACE_BYTES, 1024 * 1024, 2 ** 40),
  workspaceFiles: count('SKILL_MCP_RUN_WORKSPACE_FILES', DEFAULT_WORKSPACE_FILES, 16, MAX_WORKSPACE_FILES),
  killGraceMs: count('SKILL_MCP_KILL_GRACE_MS', 2000, 0, 60_000),
  drainMs: count('SKILL_MCP_DRAIN_MS', 500, 0, 60_000),
  runQueueMs: count('SKILL_MCP_RUN_QUEUE_MS', DEFAULT_RUN_QUEUE_MS, 0, MAX_RUN_QUEUE_MS),
  auditMaxBytes: count('SKILL_MCP_AUDIT_MAX_BYTES', 0, 0, 2 ** 50),
  auditKeep: count('SKILL_MCP_AUDIT_KEEP', 0, 0, 1_000_000),
  inputBytes: RUN_INPUT_BYTES,
  outputFilesBytes: RUN_OUTPUT_FILES_BYTES,
  dataBytes: count('SKILL_MCP_DATA_BYTES', DEFAULT_DATA_BYTES, 1, 2 ** 50),
  dataFiles: count('SKILL_MCP_DATA_FILES', DEFAULT_DATA_FILES, 1, 10_000_000),
} as const;

/** `--max-runs` / `--runs-per-client`: a whole number, or unset (`auto` for max-runs) for the machine's default. */
const runCount = (name: string, auto: boolean): VariableSpec<number | undefined> => ({
  name,
  schema: auto ? z.union([z.literal('auto').transform(() => undefined), wholeNumber(1, MAX_RUNS_LIMIT)]) : wholeNumber(1, MAX_RUNS_LIMIT),
  expected: `an integer from 1 to ${MAX_RUNS_LIMIT}${auto ? ' or "auto"' : ''}`,
  fallback: undefined,
  policy: 'stop',
});

type Env = Readonly<Record<string, string | undefined>>;

/** A `SKILL_MCP_EGRESS_CA_FILE` that cannot be read or parsed stops the start (else every run with secrets would fail at its start). */
function egressCaIssue(env: Env, issues: SettingIssue[]): void {
  const problem = egressCaFileProblem(env);
  if (problem !== undefined) issues.push({ variable: 'SKILL_MCP_EGRESS_CA_FILE', policy: 'stop', message: problem });
}

/** The runner-only variables (no flags), with every refused value: what a standalone launcher checks before it starts its runner. */
export function runnerVariableIssues(env: Env): SettingIssue[] {
  const issues: SettingIssue[] = [];
  for (const spec of Object.values(RUNNER_VARIABLES)) readVariable(env, spec, issues);
  readVariable(env, UID_RANGE, issues);
  readVariable(env, DATA_GID_RANGE, issues);
  readVariable(env, unprivilegedId('SKILL_MCP_FRONT_UID'), issues);
  readVariable(env, unprivilegedId('SKILL_MCP_FRONT_GID'), issues);
  readVariable(env, SECRETS_DIR, issues);
  readVariable(env, SECRETS_SHARED, issues);
  egressCaIssue(env, issues);
  return issues;
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

/**
 * The runner's options from its flags and variables. Throws {@link UsageError} for a command line
 * it does not accept (exit 2, with the usage) and ConfigError for a malformed value (exit 1).
 */
export function parseRunnerOptions(argv: string[], env: Env): RunnerOptions {
  const { values: flags } = parseFlags(argv, FLAGS, { usage: RUNNER_USAGE });
  const issues: SettingIssue[] = [];
  /** A flag's value, else its variable's, read through `spec`; a message names what was given. */
  const setting = <T>(flag: string, spec: VariableSpec<T>): T => {
    const given = stringFlag(flags, flag);
    return given !== undefined ? readValue(given, spec, issues, `--${flag}`) : readVariable(env, spec, issues);
  };
  const path = (flag: string): string | undefined => stringFlag(flags, flag) ?? (env[FLAGS[flag]!.variable!] || undefined);
  const socket = path('socket');
  const state = path('state-dir');
  if (!socket || !state) throw new UsageError('--socket and --state-dir are required', RUNNER_USAGE);
  const secretFile = path('front-secret-file');
  if (flags['front-secret-stdin'] === true && secretFile)
    throw new UsageError('--front-secret-stdin and --front-secret-file (SKILL_MCP_FRONT_SECRET_FILE) exclude each other', RUNNER_USAGE);
  const frontUid = setting('front-uid', unprivilegedId('SKILL_MCP_FRONT_UID'));
  let frontGid = setting('front-gid', unprivilegedId('SKILL_MCP_FRONT_GID'));
  const uidRange = setting('uid-range', UID_RANGE);
  const limits = {
    nproc: readVariable(env, RUNNER_VARIABLES.nproc, issues),
    fsizeBytes: readVariable(env, RUNNER_VARIABLES.fsizeBytes, issues),
    nofile: readVariable(env, RUNNER_VARIABLES.nofile, issues),
    memoryBytes: readVariable(env, RUNNER_VARIABLES.memoryBytes, issues),
    tmpBytes: readVariable(env, RUNNER_VARIABLES.tmpBytes, issues),
    workspaceBytes: readVariable(env, RUNNER_VARIABLES.workspaceBytes, issues),
    workspaceFiles: readVariable(env, RUNNER_VARIABLES.workspaceFiles, issues),
    inputBytes: readVariable(env, RUNNER_VARIABLES.inputBytes, issues),
    outputFilesBytes: readVariable(env, RUNNER_VARIABLES.outputFilesBytes, issues),
  };
  const killGraceMs = readVariable(env, RUNNER_VARIABLES.killGraceMs, issues);
  const drainMs = readVariable(env, RUNNER_VARIABLES.drainMs, issues);
  const runQueueMs = readVariable(env, RUNNER_VARIABLES.runQueueMs, issues);
  const auditMaxBytes = readVariable(env, RUNNER_VARIABLES.auditMaxBytes, issues);
  const auditKeep = readVariable(env, RUNNER_VARIABLES.auditKeep, issues);
  const data = {
    quota: { bytes: readVariable(env, RUNNER_VARIABLES.dataBytes, issues), files: readVariable(env, RUNNER_VARIABLES.dataFiles, issues) },
    gids: readVariable(env, DATA_GID_RANGE, issues),
  };
  // Security: a run's gid is its uid; a data folder's group must never be some run's own.
  if (data.gids.first <= uidRange.last && uidRange.first <= data.gids.last)
    issues.push({
      variable: 'SKILL_MCP_DATA_GID_RANGE',
      policy: 'stop',
      message: 'SKILL_MCP_DATA_GID_RANGE overlaps SKILL_MCP_UID_RANGE; give the two ranges no id in common',
    });
  const maxRuns = setting('max-runs', runCount('SKILL_MCP_MAX_RUNS', true));
  const runsPerClient = setting('runs-per-client', runCount('SKILL_MCP_RUNS_PER_CLIENT', false));
  // Read again at every prepare and run (runner/secrets/source.ts); a malformed one stops the start.
  readVariable(env, SECRETS_DIR, issues);
  readVariable(env, SECRETS_SHARED, issues);
  egressCaIssue(env, issues);
  refuseToStart(issues);
  if (frontUid !== undefined && frontGid === undefined) {
    frontGid = primaryGid(frontUid);
    if (frontGid === undefined)
      throw new ConfigError([
        { variable: '--front-uid', policy: 'stop', message: `--front-uid ${frontUid} has no passwd entry; pass --front-gid too` },
      ]);
  }
  const stateDir = resolve(state);
  return {
    socketPath: resolve(socket),
    stateDir,
    // The standalone launcher passes the folder it found the same way (shared/state-dir.ts): named after where that came from.
    stateFrom:
      stringFlag(flags, 'state-dir') === undefined
        ? 'SKILL_MCP_STATE_DIR'
        : resolve(stateDirOf(env as NodeJS.ProcessEnv)) === stateDir
          ? stateDirSource(env as NodeJS.ProcessEnv)
          : '--state-dir',
    scratchDir: resolve(path('scratch-dir') || join(stateDir, 'scratch')),
    scratchExplicit: Boolean(path('scratch-dir')),
    auditPath: resolve(path('audit-log') || join(stateDir, 'audit.log')),
    frontUid,
    frontGid,
    uidRange,
    data,
    limits,
    bwrap: env['SKILL_MCP_BWRAP'] || undefined,
    killGraceMs,
    drainMs,
    frontSecret:
      flags['front-secret-stdin'] === true ? { from: 'stdin' } : secretFile ? { from: 'file', path: resolve(secretFile) } : undefined,
    maxRuns,
    runsPerClient,
    runQueueMs,
    auditMaxBytes,
    auditKeep,
  };
}
