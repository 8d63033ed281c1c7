/**
 * @module `skill-mcp deps install [--skill NAME] [--state-dir DIR]` and `skill-mcp deps list`:
 * the operator's step that builds every missing environment of the served skills, reading the
 * same settings as the server (SKILLS_DIR / MCP_SKILLS_PATH, the index variables, SKILL_MCP_BWRAP,
 * SKILL_MCP_STATE_DIR) and each skill's declaration the way the runner reads it. An environment
 * that is there and matches its manifest is kept; a tampered one is rebuilt.
 */
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { parseFlags, stringFlag, UsageError, wantsHelp } from '../../shared/cli-args.js';
import { stateDirProblem, stateDirSource, unreadableByOthers } from '../../shared/state-dir.js';
import { joinFreshSessionKeyring } from '../../runner/sandbox/keyring.js';
import { loadHostPrograms } from '../../runner/sandbox/seccomp-programs.js';
import { probePlatform, resolveBinary } from '../../runner/sandbox/platform.js';
import { usesBwrap } from '../../runner/sandbox/platform.js';
import { DEFAULT_CLAIM_DIR, UidClaims } from '../../runner/uids/claims.js';
import { DEFAULT_UID_RANGE, parseUidRange, UidPool } from '../../runner/uids/pool.js';
import { Identities } from '../../runner/deps/identity.js';
import { buildEnvironment } from './install.js';
import { describeInstallSandbox, TMP_BYTES } from './sandbox.js';
import { collect, environmentStatus, interpreterPaths } from './status.js';
import { ensureEnvsDir, removeTree } from '../../runner/deps/store.js';
import { npmConfig, pipConfig } from './tool-config.js';
import type { ToolConfig } from './tool-config.js';
import { EnvVerifier } from '../../runner/deps/verify.js';

export const DEPS_USAGE = `usage:
  skill-mcp deps install [--skill NAME] [--state-dir DIR]
      build every missing environment of the served skills (or only NAME's), sandboxed, from the
      operator's index: SKILL_MCP_PIP_INDEX_URL (+ SKILL_MCP_PIP_FIND_LINKS), SKILL_MCP_NPM_REGISTRY;
      unset, pip's and npm's own configuration of this user. Run it as the user the runner runs as.
  skill-mcp deps list [--skill NAME] [--state-dir DIR] [--json]
      each skill's environments: kind, digest, state (ready, missing, tampered)
The state directory is --state-dir, else SKILL_MCP_STATE_DIR, else the default (root: /var/lib/skill-mcp).`;

export async function depsMain(argv: string[], options: { bundledSkills: string }): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${DEPS_USAGE}\n`);
    return;
  }
  const [verb, ...rest] = argv;
  if (verb !== 'install' && verb !== 'list')
    throw new UsageError(
      verb === undefined ? 'deps needs a verb: install or list' : `unknown deps verb ${JSON.stringify(verb)}`,
      DEPS_USAGE,
    );
  const { values } = parseFlags(
    rest,
    { skill: { type: 'string' }, 'state-dir': { type: 'string' }, json: { type: 'boolean' } },
    { usage: DEPS_USAGE },
  );
  const skillFlag = stringFlag(values, 'skill');
  const only = skillFlag !== undefined ? [skillFlag] : [];
  const env = process.env;
  const out = (line: string): void => void process.stdout.write(`${line}\n`);
  const asRoot = process.getuid?.() === 0;
  const pool = asRoot
    ? new UidPool(
        parseUidRange(env['SKILL_MCP_UID_RANGE'] || DEFAULT_UID_RANGE),
        [0],
        new UidClaims(env['SKILL_MCP_UID_CLAIM_DIR'] || DEFAULT_CLAIM_DIR),
      )
    : undefined;
  // Root installs as a uid of the run range, claimed like a run's, so no run shares it meanwhile.
  const uid = await pool?.take();
  try {
    // Security: as a runner does at start — the keys of the session the operator runs this in are
    // possessed by none of the install's steps (a source build runs a package's own code).
    const ownKeyring = joinFreshSessionKeyring();
    const platform = probePlatform({
      searchPath: env['PATH'],
      bwrapSetting: env['SKILL_MCP_BWRAP'] || undefined,
      probeUid: uid,
      tmpBytes: TMP_BYTES,
      ownKeyring,
      programs: loadHostPrograms(),
    });
    const ids = new Identities();
    const { rows, index, settings } = await collect(env, options.bundledSkills, only, platform, ids, out, DEPS_USAGE);
    const stateDir = stringFlag(values, 'state-dir') ?? settings.stateDir;
    const verifier = new EnvVerifier();
    if (verb === 'list') {
      const list = await environmentStatus(env, options.bundledSkills, platform, ids, verifier, stateDir, only);
      if (values['json'] === true) out(JSON.stringify(list, null, 2));
      else for (const r of list) out('problem' in r ? `${r.skill}: ${r.problem}` : `${r.skill}: ${r.kind} ${r.digest} ${r.state}`);
      return;
    }
    if (index.problems.length > 0) throw new UsageError(index.problems.join('; '), DEPS_USAGE);
    // Checked before anything is built: the runs' uids must reach what is installed here.
    const stateProblem = stateDirProblem(
      stateDir,
      stringFlag(values, 'state-dir') !== undefined ? '--state-dir' : stateDirSource(env),
      asRoot,
    );
    if (stateProblem !== undefined) throw new Error(stateProblem);
    const envsDir = ensureEnvsDir(stateDir);
    out(
      `environments in ${envsDir}; install sandbox: ${describeInstallSandbox(platform, ownKeyring)}${uid !== undefined ? `, as uid ${uid}` : ''}`,
    );
    const python3 = interpreterPaths(platform).python3;
    const node = interpreterPaths(platform).node;
    const npm = resolveBinary('npm', env['PATH'], false);
    const tools: { python?: ToolConfig; node?: ToolConfig } = {};
    let failed = 0;
    for (const row of rows) {
      if (!row.resolved.ok) {
        out(`${row.skill.name}: cannot be installed: ${row.resolved.why}`);
        failed += 1;
        continue;
      }
      for (const e of row.resolved.envs) {
        const label = `${row.skill.name}: ${e.spec.kind} environment ${e.digest}`;
        const dir = join(envsDir, e.digest);
        const verdict = await verifier.verify(dir, e.digest);
        if (verdict.ok) {
          out(`${label}: already installed`);
          continue;
        }
        if (verdict.state === 'tampered') {
          out(`${label}: was tampered with (${verdict.why}); removing it and building it again`);
          removeTree(dir);
        }
        // Security: a source build runs the package's own code; without bubblewrap nothing would keep it off the network.
        if (e.spec.sourceBuilds && !usesBwrap(platform)) {
          out(
            `${label}: NOT installed: source builds are allowed by the declaration but need the bubblewrap sandbox (install bubblewrap), which confines a build's network to the index`,
          );
          failed += 1;
          continue;
        }
        let tool: ToolConfig;
        try {
          if (e.spec.kind === 'python') tool = tools.python ??= pipConfig(python3!, index, env);
          else {
            if (!('path' in npm)) throw new Error(`npm is needed for node requirements: ${npm.why}`);
            tool = tools.node ??= npmConfig(node!, realpathSync(npm.path), index, env);
          }
        } catch (error) {
          out(`${label}: NOT installed: ${(error as Error).message}`);
          failed += 1;
          continue;
        }
        // Root installs as another uid, which bubblewrap binds these as: one it cannot read stops here, named.
        const unreadable = uid === undefined ? undefined : tool.paths.map((p) => ({ p, why: unreadableByOthers(p) })).find((x) => x.why);
        if (unreadable !== undefined) {
          out(
            `${label}: NOT installed: the install runs as uid ${uid}, which cannot read ${unreadable.p} (from ${tool.pathFrom[unreadable.p] ?? 'the index configuration'}): ${unreadable.why}. Keep the index where every uid may read it (e.g. under /srv or /opt, chmod -R o+rX), or serve it over http on this machine`,
          );
          failed += 1;
          continue;
        }
        out(
          `${label}: installing (${e.spec.kind === 'python' ? (e.spec.sourceBuilds ? 'source builds allowed' : 'wheels only') : 'npm ci, no install scripts'}) from ${tool.describe.join(', ')}`,
        );
        if (usesBwrap(platform))
          out(
            `  files: the sandbox sees the system folders and, read-only, only these of the index configuration: ${tool.paths.length > 0 ? tool.paths.join(', ') : 'none'}`,
          );
        out(
          `  network: ${!usesBwrap(platform) ? 'NOT confined (no bubblewrap): the install can reach any host' : tool.hosts.length === 0 ? 'none (every index is local)' : `only ${tool.hosts.join(', ')}, through the install's own proxy`}`,
        );
        const result = await buildEnvironment(
          {
            envsDir,
            skill: row.skill.name,
            platform,
            ...(uid !== undefined ? { uid } : {}),
            ...(python3 ? { python3 } : {}),
            ...(node ? { node } : {}),
            ...('path' in npm ? { npmCli: realpathSync(npm.path) } : {}),
            tool,
            log: out,
          },
          e,
        );
        if (result.ok) out(`${label}: installed ${result.resolved.length} package(s): ${result.resolved.join(', ')}`);
        else {
          out(`${label}: NOT installed: ${result.why}`);
          failed += 1;
        }
      }
    }
    if (rows.length === 0) out('no served skill declares requirements');
    if (failed > 0) process.exitCode = 1;
  } finally {
    if (uid !== undefined) await pool?.release(uid);
  }
}
