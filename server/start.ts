/**
 * @module Start-up shared by every transport: read the configuration (shared/settings.ts, as the
 * runner does), scan the catalog once, build the context. A value that stops the runner stops the
 * front too; tuning mistakes become `config` problems and lines on stderr, never silent defaults.
 */
import { lstatSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { join, resolve } from 'node:path';
import { isHosted } from '../shared/mode.js';
import { stateDirOf } from '../shared/state-dir.js';
import { configView } from '../shared/config-view.js';
import type { Problem } from '../shared/problems.js';
import { Announcer } from './announce.js';
import { readSharedSettings, startupReport } from '../shared/settings.js';
import { debugLine, readLogLevel } from '../shared/log-line.js';
import { RUN_INPUT_BYTES } from '../shared/run-io.js';
import { ConfigError, readVariable, refuseToStart, wholeNumber, type SettingIssue, type VariableSpec } from '../shared/settings-schema.js';
import { rootLabel } from '../shared/discover.js';
import { readVisibility } from '../shared/visibility.js';
import { explainUnreadableRoot } from '../shared/unreadable-root.js';
import { Catalog } from './catalog/catalog.js';
import { DigestIndex } from './catalog/digest-index.js';
import { readWatchSettings, startLiveCatalog } from './catalog/live.js';
import { createApprovalCodec } from './confirm/request-state.js';
import { readConfirmSettings } from './confirm/settings.js';
import { createFrontContext, type FrontContext } from './context.js';
import { RunnerLink, type RunnerLinkOptions } from './runner-link.js';
import { fullCollector } from './tools/collect.js';

/** Front-only: entries per skills/list, prompts/list and directory page. */
export const PAGE_SIZE: VariableSpec<number> = {
  name: 'SKILL_MCP_PAGE_SIZE',
  schema: wholeNumber(1),
  expected: 'a positive integer',
  fallback: 100,
  policy: 'default',
};

/**
 * V8 lets the heap grow by up to 4× between full collections; a 4 MiB skill_file batch makes
 * ~35 MB of short-lived strings (file text, base64, the JSON answer, its UTF-8 copy), so garbage of
 * several batches piled up: peak RSS 175-230 MB on 30 skills (bench/). Growing by at most 20%
 * collects it sooner: peak 134-143 MB, and 144 instead of 178 MB after a 5,000-skill start, at a
 * few ms per batch. The flag is read at each collection, so setting it at run time takes effect.
 *
 * The stdio front only (one client, a process per session: its peak RSS is the target). The HTTP
 * front is a long-lived server under many small requests, where the cap ran ~6× as many full
 * collections as V8's own growth (GC 17 % of its CPU against the reference's 8 %, bench/RESULTS.md);
 * it keeps V8's default, and still collects right before a big skill_file batch (tools/collect.ts).
 */
const HEAP_GROWING_FLAG = '--heap-growing-percent=20';

/** Caps the heap's growth between full collections (see {@link HEAP_GROWING_FLAG}): for the stdio front. */
export function keepHeapSmall(): void {
  setFlagsFromString(HEAP_GROWING_FLAG);
}

/**
 * A runner someone else started (hosted, or an explicit socket): `SKILL_MCP_RUNNER_SOCKET`, and the
 * operator's front secret (`SKILL_MCP_FRONT_SECRET_FILE`, read now: a root launcher still may).
 * Without a socket there is no runner, and only `skill_run` says so.
 */
export async function externalRunner(env: NodeJS.ProcessEnv): Promise<RunnerLinkOptions> {
  const socketPath = env['SKILL_MCP_RUNNER_SOCKET'];
  if (!socketPath)
    return {
      missingWhy: 'no runner socket is configured (set SKILL_MCP_RUNNER_SOCKET to the socket of a runner started with `skill-mcp runner`)',
    };
  const secretFile = env['SKILL_MCP_FRONT_SECRET_FILE'];
  if (!secretFile) return { socketPath };
  // Imported only here: it pulls in the runner protocol's schemas, which a front without a secret file loads on first use.
  const { readFrontSecretFile } = await import('../shared/front-secret.js');
  return { socketPath, frontSecret: readFrontSecretFile(secretFile) };
}

/** Where the front keeps its warm-start digest index by default, in its state directory. */
export const DEFAULT_DIGEST_INDEX = 'front-digest-index.json';

/**
 * `SKILL_MCP_DIGEST_INDEX`: a path, or `off`. Unset: {@link DEFAULT_DIGEST_INDEX} in the state
 * directory, standalone only and only when that folder is this uid's own and closed to others —
 * a root-started front (another uid by now) and a hosted front have no folder of their own there,
 * and get no index unless one is named.
 */
export function digestIndexPath(env: NodeJS.ProcessEnv): string | undefined {
  const named = env['SKILL_MCP_DIGEST_INDEX'];
  if (named === 'off') return undefined;
  if (named) return resolve(named);
  if (isHosted(env)) return undefined;
  const dir = stateDirOf(env);
  try {
    const s = lstatSync(dir);
    // Security: a folder others may write to could have the index swapped under us.
    if (!s.isDirectory() || s.uid !== process.getuid?.() || (s.mode & 0o022) !== 0) return undefined;
  } catch {
    return undefined; // no state folder yet (the runner makes it): the next start has one
  }
  return join(dir, DEFAULT_DIGEST_INDEX);
}

/**
 * What the front serves, for its one ready line (`serving 3 skills from /srv/skills (SKILLS_DIR)`):
 * how many skills, from where, and how many problems skill_list reports. The operator's log, so
 * absolute paths are fine.
 */
export function servingLine(front: Pick<FrontContext, 'catalog'>, env: NodeJS.ProcessEnv, bundledSkills: string): string {
  const settings = readSharedSettings(env, bundledSkills);
  const count = front.catalog.skills().length;
  const from =
    settings.rootsFrom === undefined
      ? `the bundled skills (${settings.roots.join(':')})`
      : `${settings.roots.join(':')} (${settings.rootsFrom})`;
  const problems = front.catalog.problems.length;
  return `serving ${count} skill${count === 1 ? '' : 's'} from ${from}${problems > 0 ? ` (${problems} problem${problems === 1 ? '' : 's'}: skill_list shows them)` : ''}`;
}

export async function startFront(
  env: NodeJS.ProcessEnv,
  bundledSkills: string,
  runner?: RunnerLinkOptions,
  warn: (message: string) => void = () => undefined,
  runRefusal?: FrontContext['runRefusal'],
  /** The requestState key (server/confirm/request-state.ts frontStateKey); random when absent. */
  requestStateKey?: Buffer,
): Promise<FrontContext> {
  const settings = readSharedSettings(env, bundledSkills);
  // Throws ConfigError, with the runner's own message, before anything is served.
  const reported = refuseToStart(settings.issues);
  const frontIssues: SettingIssue[] = [];
  const issuesBefore = frontIssues.length;
  const pageSize = readVariable(env, PAGE_SIZE, frontIssues);
  // Set (and valid): it caps skills/list pages too; unset, those pages are cut by bytes alone.
  const pageSizeSet = (env[PAGE_SIZE.name] ?? '') !== '' && frontIssues.length === issuesBefore;
  const runInputBytes = readVariable(env, RUN_INPUT_BYTES, frontIssues);
  // Read by every writer of stderr lines (shared/log-line.ts); a bad value is said here, once.
  readLogLevel(env, frontIssues);
  const configProblems: Problem[] = [...reported, ...frontIssues].map((issue) => ({
    path: 'configuration',
    reason: 'config',
    detail: issue.message,
  }));
  const watch = readWatchSettings(env);
  for (const detail of watch.errors) configProblems.push({ path: 'configuration', reason: 'config', detail });
  const confirm = readConfirmSettings(env, settings.confirmTtlSeconds);
  const visibility = readVisibility(env);
  if (!visibility.ok)
    throw new ConfigError([
      { variable: 'SKILL_MCP_VISIBLE', policy: 'stop', message: `${visibility.error}; skill-mcp does not start with it: fix or unset it` },
    ]);
  // Where operators look: every refused value and every root problem, not only skill_list.
  const startLines = [...startupReport(settings), ...frontIssues.map((issue) => issue.message), ...watch.errors, ...confirm.warnings];
  for (const line of startLines) warn(line);
  // Digests remembered from the last start (catalog/digest-index.ts); the runner never reads it.
  const indexPath = digestIndexPath(env);
  const digestIndex = indexPath ? DigestIndex.load(indexPath, warn) : undefined;
  const catalog = await Catalog.load({
    roots: settings.roots,
    limits: settings.limits,
    env,
    configProblems,
    ...(digestIndex ? { digestIndex } : {}),
  });
  const notice = catalog.limitNotice();
  if (notice !== undefined) warn(notice);
  const announcer = new Announcer(catalog, warn);
  const live = startLiveCatalog(catalog, watch.settings, warn, debugLine(env, 'front', 'skill-mcp'));
  // The problem the model sees names no host path; the owner reading stderr gets the folder.
  const unreadable = new Set(catalog.problems.filter((p) => p.reason === 'root-unreadable').map((p) => p.path));
  for (const root of settings.roots) {
    const why = unreadable.has(rootLabel(root)) ? explainUnreadableRoot(root) : undefined;
    // Said once: rootProblems already explains a configured root that this uid cannot reach.
    if (why && !startLines.some((line) => line.endsWith(why.forHost))) warn(why.forHost);
  }
  return createFrontContext({
    catalog,
    catalogLimits: settings.limits,
    pageSize,
    ...(pageSizeSet ? { skillsPageSize: pageSize } : {}),
    announcer,
    live,
    watching: watch.settings.mode !== 'off',
    runner: new RunnerLink(runner ?? (await externalRunner(env)), () => configView(env, bundledSkills)),
    confirm,
    approvalCodec: createApprovalCodec(requestStateKey, confirm.ttlSeconds),
    runRefusal,
    collectGarbage: fullCollector(),
    runInputBytes,
    visibility,
  });
}
