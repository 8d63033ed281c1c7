/**
 * @module Builds one environment (the operator's `skill-mcp deps install`): in two fresh folders
 * beside the environments (`.build-*`, the future environment, and `.work-*`, its inputs, HOME,
 * TMPDIR and the install proxy's socket), pip or npm runs sandboxed (cli/deps/sandbox.ts):
 *
 * - Python: `pip install --target <env>/site`, wheels only (`--only-binary :all:`) unless the
 *   declaration allows source builds, `--require-hashes` when the lines carry hashes; dependencies
 *   are resolved, and `pip freeze` records what was installed in `resolved.txt`.
 * - Node: `npm ci --ignore-scripts --omit=dev` on a copy of package.json and its lockfile, which
 *   itself is the record. No package's install script runs.
 *
 * Then every entry is made the installer's and read-only (setuid bits and the install uid's
 * ownership gone), the manifest written, and the folder renamed to its digest in one step: a
 * half-built environment never has an environment's name.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, lchownSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEgressList } from '../../shared/egress.js';
import { PROXY_URL, socketPathProblem } from '../../runner/egress/bridge.js';
import { startEgressProxy } from '../../runner/helper/proxy.js';
import type { EgressProxy } from '../../runner/helper/proxy.js';
import { runProcess } from '../../runner/sandbox/process.js';
import type { Platform } from '../../runner/sandbox/platform.js';
import { usesBwrap } from '../../runner/sandbox/platform.js';
import { bubblewrapSaid } from '../../runner/sandbox/start-failure.js';
import { reapUid } from '../../runner/uids/pool.js';
import { hashFile, linkStaysInside, MANIFEST_FILE, walkEnv } from '../../runner/deps/manifest.js';
import type { Manifest, ManifestEntry } from '../../runner/deps/manifest.js';
import type { ResolvedEnv } from '../../runner/deps/resolve.js';
import { addressOf } from '../../runner/deps/spec.js';
import { ADDRESS_FILE } from '../../runner/deps/store.js';
import { buildStep, proxyEnv, stepPaths } from './sandbox.js';
import type { StepView } from './sandbox.js';
import { removeTree } from '../../runner/deps/store.js';
import type { ToolConfig } from './tool-config.js';

export const INSTALL_TIMEOUT_MS = 30 * 60 * 1000;
/** Output kept per step; the tail is printed when a step fails. */
const OUTPUT_CAP = 1024 * 1024;

export interface InstallOptions {
  envsDir: string;
  /** The skill the environment is built for (recorded in its address.json). */
  skill: string;
  platform: Platform;
  /** Root: the install uid (from the run range, claimed); undefined: the user's own. */
  uid?: number;
  python3?: string;
  node?: string;
  /** npm's own script (npm-cli.js), run with `node`. */
  npmCli?: string;
  tool: ToolConfig;
  log(line: string): void;
}

export type InstallOutcome = { ok: true; resolved: string[] } | { ok: false; why: string };

function sandboxPath(platform: Platform): string {
  return [...(platform.layout?.extra ?? []).map((dir) => `${dir}/bin`), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
}

/** Makes a built tree the installer's and read-only; refuses links out of it. */
function seal(dir: string, asRoot: boolean): void {
  for (const entry of walkEnv(dir)) {
    if (entry.type === 'link') {
      // Security: a link out of the environment would hand a run whatever it points at.
      if (!linkStaysInside(entry.path, entry.target!)) throw new Error(`${entry.path} links out of the environment (${entry.target})`);
      if (asRoot) lchownSync(entry.abs, 0, 0);
      continue;
    }
    if (asRoot) chownSync(entry.abs, 0, 0);
    // Security: nothing writable, no setuid/setgid/sticky bit survives from a package.
    chmodSync(entry.abs, entry.type === 'dir' || (entry.mode & 0o111) !== 0 ? 0o555 : 0o444);
  }
}

async function manifestOf(dir: string, base: Omit<Manifest, 'entries'>): Promise<Manifest> {
  const entries: ManifestEntry[] = [];
  for (const e of walkEnv(dir)) {
    const row: ManifestEntry = { path: e.path, type: e.type, mode: e.mode };
    if (e.type === 'file') Object.assign(row, { size: e.size, sha256: await hashFile(e.abs) });
    if (e.type === 'link') row.target = e.target!;
    entries.push(row);
  }
  return { ...base, entries };
}

function tail(text: string, lines = 30): string {
  return text
    .trimEnd()
    .split('\n')
    .slice(-lines)
    .map((l) => `    ${l}`)
    .join('\n');
}

/** Builds `env` (not yet installed) into `<envsDir>/<digest>`. */
export async function buildEnvironment(opts: InstallOptions, env: ResolvedEnv): Promise<InstallOutcome> {
  const { platform, tool } = opts;
  const asRoot = process.getuid?.() === 0;
  const tag = randomBytes(6).toString('hex');
  const buildDir = join(opts.envsDir, `.build-${tag}`);
  const workDir = join(opts.envsDir, `.work-${tag}`);
  const sandboxed = usesBwrap(platform);
  const networked = tool.hosts.length > 0;
  let proxy: EgressProxy | undefined;
  const refused: string[] = [];
  let allowed = 0;
  try {
    mkdirSync(buildDir, { mode: 0o700 });
    mkdirSync(workDir, { mode: 0o700 });
    for (const sub of ['home', 'tmp']) mkdirSync(join(workDir, sub), { mode: 0o700 });
    const give = (path: string, text: string | Buffer): void => {
      writeFileSync(path, text, { mode: 0o600 });
      if (opts.uid !== undefined) chownSync(path, opts.uid, opts.uid);
    };
    const paths = stepPaths(platform, { envDir: buildDir, workDir });
    if (env.spec.kind === 'python') give(join(workDir, 'requirements.txt'), `${(env.spec.lines ?? []).join('\n')}\n`);
    else {
      give(join(buildDir, 'package.json'), env.spec.packageJson!);
      give(join(buildDir, 'package-lock.json'), env.spec.lockfile!);
    }
    if (tool.file) give(join(workDir, tool.file.name), tool.file.text);
    // npm's global npmrc (under its own prefix) is replaced by an empty one: the registry is what the tool config says.
    if (env.spec.kind === 'node') give(join(workDir, 'npmrc-global'), '');
    if (opts.uid !== undefined)
      for (const dir of [buildDir, workDir, join(workDir, 'home'), join(workDir, 'tmp')]) chownSync(dir, opts.uid, opts.uid);

    const view: StepView = { envDir: buildDir, workDir, readOnly: tool.paths, ...(opts.uid !== undefined ? { uid: opts.uid } : {}) };
    if (sandboxed && networked) {
      const socketPath = join(workDir, 'egress.sock');
      const problem = socketPathProblem(socketPath);
      if (problem) return { ok: false, why: problem.replace('SKILL_MCP_SCRATCH_DIR', 'state directory path') };
      proxy = await startEgressProxy({
        socketPath,
        entries: parseEgressList(tool.hosts),
        onRecord: (record) => {
          if (record.decision === 'allowed') allowed += 1;
          else if (refused.length < 20) refused.push(`${record.destination} (${record.reason ?? 'refused'})`);
        },
      });
      chmodSync(socketPath, 0o600);
      if (opts.uid !== undefined) chownSync(socketPath, opts.uid, opts.uid);
      view.egressSocket = socketPath;
    }
    const stepEnv: Record<string, string> = {
      HOME: `${paths.work}/home`,
      TMPDIR: `${paths.work}/tmp`,
      PATH: sandboxPath(platform),
      LANG: 'C.UTF-8',
      ...tool.env,
      ...(tool.file ? { [tool.file.variable]: `${paths.work}/${tool.file.name}` } : {}),
      ...(env.spec.kind === 'node' ? { npm_config_globalconfig: `${paths.work}/npmrc-global` } : {}),
      ...(view.egressSocket !== undefined ? proxyEnv() : {}),
    };
    const proxyArgs = view.egressSocket !== undefined;
    const run = async (command: string[], what: string): Promise<{ ok: true; stdout: string } | { ok: false; why: string }> => {
      const spec = buildStep(platform, view, command, stepEnv);
      const afterExit = async (): Promise<void> => {
        if (opts.uid !== undefined && platform.tools.setpriv && platform.tools.kill)
          await reapUid(opts.uid, platform.tools.setpriv, platform.tools.kill);
      };
      const o = await runProcess(spec, {
        timeoutMs: INSTALL_TIMEOUT_MS,
        killGraceMs: 2000,
        drainMs: 500,
        maxStreamBytes: OUTPUT_CAP,
        afterExit: afterExit,
      }).outcome;
      if (o.ending === 'exit' && o.exitCode === 0) return { ok: true, stdout: o.stdout.toString('utf8') };
      // bubblewrap could not build the step's sandbox: say so, not that pip or npm failed.
      const said = bubblewrapSaid(o);
      if (said !== undefined) return { ok: false, why: `${what} did not start: its sandbox could not be set up (${said})` };
      const ended =
        o.ending === 'timeout'
          ? `timed out after ${INSTALL_TIMEOUT_MS / 60000} min`
          : o.ending === 'spawn-failed'
            ? 'could not be started'
            : `exited ${o.exitCode ?? o.signal}`;
      return { ok: false, why: `${what} ${ended}:\n${tail(`${o.stdout.toString('utf8')}\n${o.stderr.toString('utf8')}`)}` };
    };

    let resolved: string[];
    let record: string;
    if (env.spec.kind === 'python') {
      const python = opts.python3!;
      const install = [
        python,
        '-I',
        '-m',
        'pip',
        'install',
        '--no-input',
        '--disable-pip-version-check',
        '--no-warn-script-location',
        '--progress-bar',
        'off',
        '--no-cache-dir',
        '--target',
        `${paths.env}/site`,
        '--requirement',
        `${paths.work}/requirements.txt`,
        // Security: a source distribution runs its own build code; only a declaration that says so allows it.
        ...(env.spec.sourceBuilds ? [] : ['--only-binary', ':all:']),
        ...(env.spec.hashed ? ['--require-hashes'] : []),
        ...tool.args,
        ...(proxyArgs ? ['--proxy', PROXY_URL] : []),
      ];
      const done = await run(install, 'pip install');
      if (!done.ok) return done;
      const freeze = await run(
        [python, '-I', '-m', 'pip', 'freeze', '--disable-pip-version-check', '--path', `${paths.env}/site`],
        'pip freeze',
      );
      if (!freeze.ok) return freeze;
      resolved = freeze.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      record = 'resolved.txt';
      writeFileSync(join(buildDir, record), `${resolved.join('\n')}\n`, { mode: 0o444 });
    } else {
      const ci = [
        opts.node!,
        opts.npmCli!,
        'ci',
        '--prefix',
        paths.env,
        // Security: no package's preinstall/install/postinstall script runs, ever.
        '--ignore-scripts',
        '--omit=dev',
        '--no-audit',
        '--no-fund',
        '--no-update-notifier',
        '--no-bin-links',
        '--no-progress',
        '--cache',
        `${paths.work}/npm-cache`,
        ...tool.args,
        ...(proxyArgs ? ['--proxy', PROXY_URL, '--https-proxy', PROXY_URL, '--noproxy', ''] : []),
      ];
      const done = await run(ci, 'npm ci');
      if (!done.ok) return done;
      record = 'package-lock.json';
      const lock = JSON.parse(env.spec.lockfile!.toString('utf8')) as { packages?: Record<string, { version?: string }> };
      resolved = Object.entries(lock.packages ?? {})
        .filter(([path]) => path !== '')
        .map(([path, p]) => `${path.replace(/^.*node_modules\//, '')}@${p.version ?? '?'}`);
    }
    await proxy?.close();
    proxy = undefined;
    // What it was built from, input by input: read back when a skill's environment is missing (store.ts).
    const builtAt = new Date().toISOString();
    writeFileSync(join(buildDir, ADDRESS_FILE), `${JSON.stringify(addressOf(env.spec, opts.skill, builtAt))}\n`, { mode: 0o444 });
    seal(buildDir, asRoot);
    const manifest = await manifestOf(buildDir, {
      version: 1,
      digest: env.digest,
      kind: env.spec.kind,
      interpreter: env.spec.interpreter,
      builtAt,
      index: tool.describe,
      resolved: record,
      sourceBuilds: env.spec.sourceBuilds,
    });
    writeFileSync(join(buildDir, MANIFEST_FILE), `${JSON.stringify(manifest)}\n`, { mode: 0o444 });
    if (asRoot) chownSync(buildDir, 0, 0);
    chmodSync(buildDir, 0o555);
    try {
      // Same folder, one rename: the environment appears whole or not at all.
      renameSync(buildDir, join(opts.envsDir, env.digest));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw error;
      opts.log(`  another install finished ${env.digest.slice(0, 12)} first; keeping that one`);
    }
    return { ok: true, resolved };
  } catch (error) {
    return { ok: false, why: (error as Error).message };
  } finally {
    await proxy?.close();
    if (!sandboxed || !networked) {
      // nothing was proxied
    } else if (refused.length > 0)
      opts.log(`  network: the install's proxy refused ${refused.join(', ')} (only ${tool.hosts.join(', ')} are reachable)`);
    else opts.log(`  network: ${allowed} connection(s), all to ${tool.hosts.join(', ')}`);
    removeTree(workDir);
    removeTree(buildDir);
  }
}
