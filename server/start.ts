/**
 * @module Start-up shared by every transport: read the configuration, scan the catalog once,
 * build the context. Configuration mistakes become `config` problems, never silent defaults.
 */
import { setFlagsFromString } from 'node:v8';
import { skillRoots } from '../shared/config.js';
import { configView } from '../shared/config-view.js';
import { rootLabel } from '../shared/discover.js';
import { readCatalogLimits } from '../shared/limits.js';
import type { Problem } from '../shared/problems.js';
import { explainUnreadableRoot } from '../shared/unreadable-root.js';
import { Catalog } from './catalog/catalog.js';
import { createApprovalCodec } from './confirm/request-state.js';
import { readConfirmSettings } from './confirm/settings.js';
import { createFrontContext, type FrontContext } from './context.js';
import { RunnerLink, type RunnerLinkOptions } from './runner-link.js';
import { fullCollector } from './tools/collect.js';

const DEFAULT_PAGE_SIZE = 100;

/**
 * V8 lets the heap grow by up to 4× between full collections; a 4 MiB skill_file batch makes
 * ~35 MB of short-lived strings (file text, base64, the JSON answer, its UTF-8 copy), so garbage of
 * several batches piled up: peak RSS 175-230 MB on 30 skills (bench/). Growing by at most 20%
 * collects it sooner: peak 134-143 MB, and 144 instead of 178 MB after a 5,000-skill start, at a
 * few ms per batch. The flag is read at each collection, so setting it at run time takes effect.
 */
const HEAP_GROWING_FLAG = '--heap-growing-percent=20';

/**
 * A runner someone else started (hosted, or an explicit socket): `SKILL_MCP_RUNNER_SOCKET`, and the
 * operator's front secret (`SKILL_MCP_FRONT_SECRET_FILE`, read now: a root launcher still may).
 * Without a socket there is no runner, and only `skill_run` says so.
 */
export async function externalRunner(env: NodeJS.ProcessEnv): Promise<RunnerLinkOptions> {
  const socketPath = env['SKILL_MCP_RUNNER_SOCKET'];
  if (!socketPath) return { missingWhy: 'no runner socket is configured (set SKILL_MCP_RUNNER_SOCKET to the socket of a runner started with `skill-mcp runner`)' };
  const secretFile = env['SKILL_MCP_FRONT_SECRET_FILE'];
  if (!secretFile) return { socketPath };
  // Imported only here: it pulls in the runner protocol's schemas, which a front without a secret file loads on first use.
  const { readFrontSecretFile } = await import('../shared/front-secret.js');
  return { socketPath, frontSecret: readFrontSecretFile(secretFile) };
}

export async function startFront(
  env: NodeJS.ProcessEnv,
  bundledSkills: string,
  runner?: RunnerLinkOptions,
  warn: (message: string) => void = () => undefined,
  runRefusal?: FrontContext['runRefusal'],
): Promise<FrontContext> {
  setFlagsFromString(HEAP_GROWING_FLAG);
  const { limits, errors } = readCatalogLimits(env);
  const configProblems: Problem[] = errors.map((detail) => ({ path: 'configuration', reason: 'config', detail }));
  let pageSize = DEFAULT_PAGE_SIZE;
  const rawPage = env['SKILL_MCP_PAGE_SIZE'];
  if (rawPage !== undefined && rawPage !== '') {
    const value = Number(rawPage);
    if (Number.isSafeInteger(value) && value > 0) pageSize = value;
    else configProblems.push({ path: 'configuration', reason: 'config', detail: `SKILL_MCP_PAGE_SIZE=${JSON.stringify(rawPage)} is not a positive integer; using ${DEFAULT_PAGE_SIZE}` });
  }
  const confirm = readConfirmSettings(env);
  for (const warning of confirm.warnings) warn(warning);
  const roots = skillRoots(env, bundledSkills);
  const catalog = await Catalog.load({ roots, limits, env, configProblems });
  // The problem the model sees names no host path; the owner reading stderr gets the folder.
  const unreadable = new Set(catalog.problems.filter((p) => p.reason === 'root-unreadable').map((p) => p.path));
  for (const root of roots) {
    const why = unreadable.has(rootLabel(root)) ? explainUnreadableRoot(root) : undefined;
    if (why) warn(why.forHost);
  }
  return createFrontContext({
    catalog,
    pageSize,
    runner: new RunnerLink(runner ?? (await externalRunner(env)), () => configView(env, bundledSkills)),
    confirm,
    approvalCodec: createApprovalCodec(env['MCP_CONFIRM_SECRET'], confirm.ttlSeconds),
    runRefusal,
    collectGarbage: fullCollector(),
  });
}
