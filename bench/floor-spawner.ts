/**
 * The floor beside our run (bench/run-floor.mjs bundles this with esbuild and starts it as the
 * server's uid). It probes the machine with the runner's own probe (runner/sandbox/platform.ts), so
 * its level, its bubblewrap binds and its syscall filter are the ones a run gets, then answers one
 * line per request on stdin:
 *
 *   `bare`  — bubblewrap alone with a run's binds and filter (bwrapArgs, `--seccomp` on fd 4), the
 *             same probe script at /skill and an empty workspace at /work (as root: `setpriv` to a
 *             bench uid first, the one way to be a run's uid). Without bubblewrap: the script
 *             spawned directly (as that uid when root).
 *   `chain` — the runner's whole spawn command line (buildSpawn: setpriv, bubblewrap, env, prlimit,
 *             the launcher where the level has it) for the same script, spawned by the runner's own
 *             runProcess — everything a run starts, none of the runner's bookkeeping around it.
 *   `cgroup` — as root with run cgroups: the same chain inside a fresh run cgroup (makeRunCgroup,
 *             the `sh` step that enters it, the kill and removal after), as a run has it.
 *
 * Each answer: `{ms, pre, life}` — spawn to the process's end, spawn to the script's own start
 * (its `performance.timeOrigin`, printed by the probe script), and the script's own life.
 * Bench-only; never part of the product.
 */
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { bwrapArgs, SKILL_MOUNT } from '../runner/sandbox/bwrap.js';
import { probePlatform, usesBwrap } from '../runner/sandbox/platform.js';
import { loadHostPrograms } from '../runner/sandbox/seccomp-programs.js';
import { runProcess } from '../runner/sandbox/process.js';
import { buildSpawn, SECCOMP_FD } from '../runner/sandbox/spawn.js';
import type { SandboxLimits, SpawnSpec } from '../runner/sandbox/spawn.js';
import type { RunPlan } from '../runner/requests/derive.js';
import { makeRunCgroup, runCgroupLimit } from '../runner/sandbox/run-cgroup.js';

interface Config {
  skillDir: string;
  script: string;
  workDir: string;
  homeDir: string;
  /** Root only: the uid the bare and chain runs take (outside the runner's run-uid range). */
  uid?: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as Config;
const MIB = 1024 * 1024;
// The runner's defaults (runner/options.ts).
const limits: SandboxLimits = { nproc: 64, fsizeBytes: 64 * MIB, nofile: 256, memoryBytes: 1024 * MIB, tmpBytes: 256 * MIB, workspaceBytes: 256 * MIB, workspaceFiles: 10_000, inputBytes: 16 * MIB, outputFilesBytes: 16 * MIB };
const uid = process.getuid?.() === 0 ? config.uid : undefined;
const platform = probePlatform({ searchPath: process.env['PATH'], bwrapSetting: process.env['SKILL_MCP_BWRAP'], probeUid: uid, tmpBytes: limits.tmpBytes, programs: loadHostPrograms() });
const resolved = platform.interpreters.get('node');
if (!resolved || !('path' in resolved)) throw new Error('no node for the probe script');
const node = resolved.path;
const scriptEnv = { PATH: '/usr/bin:/bin', HOME: '/tmp', TMPDIR: '/tmp', LANG: 'C.UTF-8', SKILL_DIR: SKILL_MOUNT };
const drop = uid !== undefined ? [platform.tools.setpriv!, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--'] : [];

function bareSpec(): SpawnSpec {
  if (usesBwrap(platform)) {
    const view = { skillDir: config.skillDir, tmpBytes: limits.tmpBytes, workspace: config.workDir, ...(platform.seccomp ? { seccompFd: SECCOMP_FD } : {}) };
    const argv = [...drop, platform.tools.bwrap!, ...bwrapArgs(platform.layout!, view), '--', node, `${SKILL_MOUNT}/${config.script}`];
    return { command: argv[0]!, args: argv.slice(1), env: scriptEnv, cwd: '/', envNames: [], fds: [undefined, platform.seccomp] };
  }
  const argv = [...drop, node, `${config.skillDir}/${config.script}`];
  return { command: argv[0]!, args: argv.slice(1), env: { ...scriptEnv, HOME: config.homeDir, TMPDIR: config.homeDir }, cwd: config.workDir, envNames: [], fds: [] };
}

function chainSpec(cgroupProcs?: string[]): SpawnSpec {
  const plan = {
    willRun: { interpreter: 'node', timeoutMs: 30_000, memoryBytes: limits.memoryBytes },
    interpreterPath: node, realDir: config.skillDir, scriptRelative: config.script, args: [], grantedEnv: [],
    egress: { mode: 'none', entries: [], env: {} }, deps: {}, secrets: [], redact: [],
  } as unknown as RunPlan;
  return buildSpawn({
    plan,
    platform,
    sourceEnv: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    uid,
    limits,
    dirs: { workspace: config.workDir, home: config.homeDir },
    extras: cgroupProcs ? { cgroupProcs } : {},
  });
}

mkdirSync(config.workDir, { recursive: true });
const specs = { bare: bareSpec(), chain: chainSpec() };

let groups = 0;
type Kind = 'bare' | 'chain' | 'cgroup';

async function once(kind: Kind): Promise<{ ms: number; pre: number; life: number }> {
  const t0 = performance.timeOrigin + performance.now();
  let spec: SpawnSpec;
  let after = async (): Promise<void> => {};
  let remove = (): void => {};
  if (kind === 'cgroup') {
    if (!platform.cgroups) throw new Error('no run cgroups here (root with a memory controller only)');
    const group = makeRunCgroup(platform.cgroups, `bench-floor-${process.pid}-${groups++}`, runCgroupLimit(limits.memoryBytes, limits.tmpBytes));
    spec = chainSpec(group.procs);
    after = async () => {
      await group.kill();
    };
    remove = () => group.remove();
  } else {
    spec = specs[kind];
  }
  const proc = runProcess(spec, { timeoutMs: 30_000, killGraceMs: 0, drainMs: 1000, maxStreamBytes: MIB, afterExit: after });
  const o = await proc.outcome;
  remove();
  const ms = performance.timeOrigin + performance.now() - t0;
  if (o.exitCode !== 0) throw new Error(`${kind} failed: ${o.exitCode} ${o.signal} ${o.stderr.toString().slice(0, 300)}`);
  const stamp = JSON.parse(o.stdout.toString()) as { start: number; end: number };
  return { ms, pre: stamp.start - t0, life: stamp.end - stamp.start };
}

process.stdout.write(`${JSON.stringify({ ready: true, cgroups: platform.cgroups !== undefined, level: platform.isolation, seccomp: platform.seccomp !== undefined, launcher: platform.launcher !== undefined, bare: [specs.bare.command, ...specs.bare.args].length, chain: [specs.chain.command, ...specs.chain.args].slice(0, 12) })}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  once(line.trim() as Kind).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (error: unknown) => process.stdout.write(`${JSON.stringify({ error: (error as Error).message })}\n`),
  );
});
