/**
 * @module `skill_list`: every served skill with what it declares and what may run here, plus
 * `problems`, so an empty or short list is never a mystery, and "nothing runs" is never confused
 * with "nothing declared". What may run comes from the runner (which re-derives it); when the
 * runner cannot be reached, the scripts are listed as unavailable with that reason.
 *
 * Paged, so one answer never floods a model's context on a catalog of thousands: at most `limit`
 * skills (default {@link DEFAULT_LIST_LIMIT}) and about {@link PAGE_BUDGET_CHARS} characters of
 * them, then a `nextCursor`; the first page carries the first {@link FIRST_PAGE_PROBLEMS} problems
 * and `problemCount`, and `problems: true` pages through all of them the same way.
 */
import { createHash } from 'node:crypto';
import { INTERPRETERS } from '../../shared/declaration.js';
import { SkillMcpError } from '../../shared/errors.js';
import { grantFrom, grantScripts, type GrantSource } from '../../shared/grant.js';
import type { Problem } from '../../shared/problems.js';
import type { Provenance } from '../../shared/provenance.js';
import type { DescribeResult, Identity } from '../../shared/protocol.js';
import type { FrontContext } from '../context.js';
import type { LockReads } from '../catalog/catalog.js';
import { uriFor } from '../catalog/uri.js';
import { contentMismatch, frontContent } from './content-check.js';

export const HOSTED_GRANT_NOTE =
  'Hosted mode grants nothing by default: instructions and files are served, but no script runs until the owner lists it in MCP_SKILL_RUN as JSON [{"skill","script","env":[...],"egress":[...]}].';

/** What `skill_list` says about the grant as a whole, when there is something to say. */
export function grantNote(source: GrantSource): string | undefined {
  if (source.kind === 'hosted-default') return HOSTED_GRANT_NOTE;
  if (source.kind === 'owner' && source.error)
    return `The owner's grant could not be read: ${source.error}. The owner must fix MCP_SKILL_RUN (JSON [{"skill","script","env":[...]}]) and restart.`;
  return undefined;
}

export const DEFAULT_LIST_LIMIT = 25;
export const MAX_LIST_LIMIT = 200;
/** A page ends once its entries (as compact JSON) reach this many characters; never inside an entry. */
const PAGE_BUDGET_CHARS = 24_000;
/** Problems shown with the first page; `problems: true` pages through the rest. */
const FIRST_PAGE_PROBLEMS = 50;
/** From this many skills on, the answer points at skill_search. */
const SEARCH_HINT_FROM = 50;

/** True when MCP_SKILL_RUN has rows for this script (so the caller is simply not among their subjects). */
function grantedToOthers(grant: GrantSource, skill: string, script: string): boolean {
  return grant.kind === 'owner' && grant.rows.some((row) => row.skill === skill && row.script === script);
}

export interface ListRequest {
  cursor?: string | undefined;
  limit?: number | undefined;
  problems?: boolean | undefined;
  /** Who asks (HTTP with OAuth): grant rows naming subjects count for this identity only. */
  identity?: Identity | undefined;
}

/** Cursors name the list they were cut from (catalog/source.ts says why) and the last key given. */
function encodeCursor(kind: string, list: string, key: string): string {
  return Buffer.from(`${kind}:${list}:${key}`).toString('base64url');
}

function decodeCursor(kind: string, cursor: string | undefined, list: string): string | undefined {
  if (cursor === undefined) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = new RegExp(`^${kind}:([A-Za-z0-9_-]+):`).exec(text);
  if (!match || Buffer.from(text).toString('base64url') !== cursor) {
    throw new SkillMcpError(
      'INVALID_CURSOR',
      'this cursor was not issued by skill_list for this list: pass back nextCursor exactly as received, or call skill_list without a cursor to start over.',
    );
  }
  if (match[1] !== list)
    throw new SkillMcpError(
      'INVALID_CURSOR',
      'the catalog changed since this cursor was issued (skills or problems were added, removed or renamed): call skill_list again without a cursor.',
    );
  return text.slice(match[0].length);
}

/** Items after the cursor's key: at most `limit`, and entries up to the character budget (at least one). */
function pageOf<T>(
  items: T[],
  key: (item: T, index: number) => string,
  after: string | undefined,
  limit: number,
  shape: (item: T) => unknown,
): { page: unknown[]; lastKey?: string; more: boolean } {
  let start = 0;
  if (after !== undefined) {
    start = items.findIndex((item, i) => key(item, i) > after);
    if (start < 0) start = items.length;
  }
  const page: unknown[] = [];
  let used = 0;
  let i = start;
  for (; i < items.length && page.length < limit; i++) {
    const shaped = shape(items[i]!);
    used += JSON.stringify(shaped).length;
    if (used > PAGE_BUDGET_CHARS && page.length > 0) break;
    page.push(shaped);
  }
  return i > start ? { page, lastKey: key(items[i - 1]!, i - 1), more: i < items.length } : { page, more: false };
}

export async function skillList(front: FrontContext, request: ListRequest = {}): Promise<Record<string, unknown>> {
  const { catalog } = front;
  const limit = request.limit ?? DEFAULT_LIST_LIMIT;
  if (request.problems) return problemPage(front, request.cursor, limit);
  const list = catalog.servedFingerprint;
  const after = decodeCursor('l1', request.cursor, list);
  let described: DescribeResult | undefined;
  let runnerWhy: string | undefined;
  const records = catalog.skills();
  // Only the skills this page can hold are described: the runner's cost follows the page, not the catalog.
  const from = after === undefined ? 0 : records.findIndex((r) => r.name > after);
  const candidates = from < 0 ? [] : records.slice(from, from + limit).map((r) => r.name);
  try {
    described = await front.runner.describe(candidates, request.identity);
  } catch (error) {
    runnerWhy = error instanceof Error ? error.message : String(error);
  }
  // The runner's problems first: they concern every skill, and the first page shows only the first problems.
  const problems: Problem[] = [];
  if (described && !described.environ.scrubbed && !described.runsAllowed) {
    problems.push({
      path: 'runner',
      reason: 'environ-unscrubbed',
      detail: described.runsRefusedWhy ?? 'the runner could not clear its environ; no script runs',
    });
  }
  const mismatch = described?.configMismatch;
  if (mismatch) problems.push({ path: 'runner', reason: 'config-mismatch', detail: mismatch.message });
  problems.push(...catalog.problems);
  // Nothing runs through this front at all (HTTP without a token, a runner configured otherwise): say why per script.
  const refusedWhy = front.runRefusal?.message ?? mismatch?.message;
  // Security: a skill whose bytes the runner sees otherwise than this front runs nothing here
  // (tools/content-check.ts); say so per skill rather than let a preview be refused unexplained.
  const contentDiffers = new Map<string, string>();
  for (const runnerSkill of described?.skills ?? []) {
    const record = catalog.get(runnerSkill.name);
    if (!record || !runnerSkill.content || !('digest' in runnerSkill.content)) continue;
    const why = contentMismatch(record.name, await frontContent(front, record), runnerSkill.content.digest, runnerSkill.content.fileCount);
    if (why === undefined) continue;
    contentDiffers.set(record.name, why);
    problems.push({ path: record.displayPath, reason: 'content-mismatch', detail: why });
  }
  const locks: LockReads = new Map();
  const shape = (record: (typeof records)[number]): Record<string, unknown> => {
    const scripts: unknown[] = [];
    const ungrantedScripts: unknown[] = [];
    const unavailableScripts: unknown[] = [];
    const runnerSkill = described?.skills.find((s) => s.name === record.name);
    const differs = contentDiffers.get(record.name);
    for (const grant of grantScripts(record.name, record.declaration, catalog.grant, request.identity)) {
      const { script, interpreter, timeoutMs } = grant.declared;
      const info = runnerSkill?.scripts.find((s) => s.script === script);
      // An interpreter outside the fixed set can never run, whatever is granted: say so first.
      if (!(INTERPRETERS as readonly string[]).includes(interpreter)) {
        unavailableScripts.push({
          script,
          interpreter,
          why: `interpreter "${interpreter}" is not one of ${INTERPRETERS.join(', ')}; this script never runs`,
        });
      } else if (grant.granted && refusedWhy !== undefined) unavailableScripts.push({ script, interpreter, why: refusedWhy });
      else if (!grant.granted || info?.granted === false) {
        ungrantedScripts.push({
          script,
          interpreter,
          why:
            catalog.grant.kind === 'hosted-default'
              ? 'hosted mode grants nothing without MCP_SKILL_RUN'
              : grantedToOthers(catalog.grant, record.name, script)
                ? 'granted by MCP_SKILL_RUN to other identities, not to you'
                : 'not granted by MCP_SKILL_RUN',
        });
      } else if (!described) unavailableScripts.push({ script, interpreter, why: runnerWhy });
      else if (!info?.runnable) {
        unavailableScripts.push({
          script,
          interpreter,
          why: info?.why ?? 'the runner does not find this script',
          ...(info?.deps !== undefined ? { deps: info.deps } : {}),
          // What it would send where, had it run (names and hosts only).
          ...(grant.secrets.length > 0
            ? { secrets: grant.secrets.map(({ name, hosts, header, format }) => ({ name, hosts, header, format })) }
            : {}),
        });
      } else if (differs !== undefined) unavailableScripts.push({ script, interpreter, why: differs });
      else {
        scripts.push({
          script,
          interpreter,
          timeoutMs,
          envNames: info.envNames,
          ...(info.envNotSet.length > 0 ? { envNotSet: info.envNotSet } : {}),
          ...(info.envWarning !== undefined ? { envWarning: info.envWarning } : {}),
          ...(info.egress !== undefined ? { egress: info.egress } : {}),
          ...(info.egressRules !== undefined ? { egressRules: info.egressRules } : {}),
          ...(info.egressWarning !== undefined ? { egressWarning: info.egressWarning } : {}),
          ...(info.egressNote !== undefined ? { egressNote: info.egressNote } : {}),
          ...(info.deps !== undefined ? { deps: info.deps } : {}),
          // Names, hosts and how each is sent: never a value.
          ...(info.secrets !== undefined ? { secrets: info.secrets } : {}),
          ...(info.secretsNotBound !== undefined ? { secretsNotBound: info.secretsNotBound } : {}),
          ...(info.secretsWarning !== undefined ? { secretsWarning: info.secretsWarning } : {}),
        });
      }
    }
    return {
      name: record.name,
      description: record.description,
      ...(record.whenToUse !== undefined ? { whenToUse: record.whenToUse } : {}),
      fileCount: record.files.length,
      published: record.published,
      ...(record.declarationOrigin ? { declarationFrom: record.declarationOrigin.from } : {}),
      ...(record.declarationOrigin?.pinned ? { declarationPinned: true } : {}),
      ...(record.declarationOrigin?.replaces ? { declarationReplaces: record.declarationOrigin.replaces } : {}),
      ...(record.published ? { uri: uriFor(record.name, 'SKILL.md') } : {}),
      ...provenanceField(catalog.provenance(record, locks)),
      runnable: scripts.length > 0,
      scripts,
      ...(ungrantedScripts.length > 0 ? { ungrantedScripts } : {}),
      ...(unavailableScripts.length > 0 ? { unavailableScripts } : {}),
      // A folder its scripts keep between runs: its name, quota and what it holds — the asker's own
      // (the runner reads the folder of the identity it is given; `anyone` without one).
      ...(runnerSkill?.data ? { data: runnerSkill.data } : {}),
    };
  };
  const { page, lastKey, more } = pageOf(records, (r) => r.name, after, limit, shape);
  const firstPage = request.cursor === undefined;
  return {
    skills: page,
    total: records.length,
    ...(more && lastKey !== undefined ? { nextCursor: encodeCursor('l1', list, lastKey) } : {}),
    ...(catalog.limitNotice() !== undefined ? { limitNotice: catalog.limitNotice() } : {}),
    ...(records.length >= SEARCH_HINT_FROM
      ? { hint: `${records.length} skills: find one by what it does with skill_search {"query": "..."}; page through all with nextCursor.` }
      : {}),
    ...(firstPage ? { problems: problems.slice(0, FIRST_PAGE_PROBLEMS) } : {}),
    problemCount: problems.length,
    ...(firstPage && problems.length > FIRST_PAGE_PROBLEMS
      ? {
          problemsNote: `the first ${FIRST_PAGE_PROBLEMS} of ${problems.length} problems; call skill_list with {"problems": true} to page through all`,
        }
      : {}),
    grantFrom: grantFrom(catalog.grant),
    ...(grantNote(catalog.grant) !== undefined ? { grantNote: grantNote(catalog.grant) } : {}),
    isolation: described
      ? {
          ...described.isolation,
          interpreters: described.interpreters,
          ...(front.runner.restarts() > 0 ? { runnerRestarts: front.runner.restarts() } : {}),
          ...(mismatch ? { configMismatch: mismatch } : {}),
        }
      : { level: 'unavailable', detail: `no script can run: ${runnerWhy}` },
  };
}

/** `pulledFrom`, when `skill-mcp pull` wrote the skill (shared/provenance.ts). */
function provenanceField(provenance: Provenance | undefined): Record<string, unknown> {
  return provenance ? { pulledFrom: provenance } : {};
}

/** Every catalog problem, a page at a time (the runner's, if any, lead the first skills page). */
function problemPage(front: FrontContext, cursor: string | undefined, limit: number): Record<string, unknown> {
  const problems = front.catalog.problems;
  const keyOf = (_problem: Problem, i: number): string => String(i).padStart(9, '0');
  const list = createHash('sha256').update(JSON.stringify(problems)).digest('base64url').slice(0, 12);
  const after = decodeCursor('q1', cursor, list);
  const { page, lastKey, more } = pageOf(problems, keyOf, after, limit, (p) => p);
  return {
    problems: page,
    problemCount: problems.length,
    ...(more && lastKey !== undefined ? { nextCursor: encodeCursor('q1', list, lastKey) } : {}),
  };
}
