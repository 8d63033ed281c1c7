/**
 * @module The `describe` answer: what this runner can run, re-derived now, with names only — the
 * isolation level a person should know about, which interpreters exist (and why not), whether the
 * environ was scrubbed, and per declared script whether it is granted and which variable names it
 * would get. Never values, never absolute host paths.
 */
import type { DescribeResult, Identity, ScriptInfo } from '../../shared/protocol.js';
import { dataWho } from '../../shared/data.js';
import { PROTOCOL_VERSION } from '../../shared/protocol.js';
import { discoverSkills } from '../../shared/discover.js';
import { skillRoots } from '../../shared/config.js';
import { ANY_CALLER, grantFrom, readGrantSource } from '../../shared/grant.js';
import { contentInPlace, declaredScripts, deriveRun, findSkill, onceContent } from './derive.js';
import type { ContentSource, DeriveContext } from './derive.js';
import type { ScrubResult } from '../hygiene.js';
import { readDataRecord } from '../data/folder.js';

/**
 * `names`: only these skills (found one by one, like a run finds its skill), so a skill_list page
 * costs the runner its own size, not the catalog's; absent: every skill the runner serves.
 */
export async function describeRunner(
  ctx: DeriveContext,
  environ: ScrubResult,
  refusedWhy: string | undefined,
  names?: readonly string[],
  dataBase?: string,
  identity?: Identity,
): Promise<DescribeResult> {
  const { platform } = ctx;
  const found =
    names === undefined
      ? (await discoverSkills(skillRoots(ctx.env as NodeJS.ProcessEnv, ctx.bundledSkills), ctx.limits.maxSkills)).skills
      : (await Promise.all([...new Set(names)].map((name) => findSkill(ctx, name)))).filter((skill) => skill !== undefined);
  const skills: DescribeResult['skills'] = [];
  for (const skill of found) {
    // Read once per skill (a pin and every script of it bind the same files); a front compares the digest.
    const readOnce = onceContent(contentInPlace(ctx), skill);
    const { scripts, problems, origin } = await declaredScripts(ctx, skill, readOnce);
    const infos: ScriptInfo[] = [];
    const read = scripts.length > 0 ? await readOnce() : undefined;
    const once: ContentSource = { read: readOnce };
    let data: DescribeResult['skills'][number]['data'];
    for (const declared of scripts) {
      const derived = await deriveRun(ctx, {
        skill: skill.name,
        script: declared.script,
        args: [],
        known: skill,
        content: once,
        caller: ANY_CALLER,
      });
      const base = { script: declared.script, interpreter: declared.interpreter, timeoutMs: declared.timeoutMs };
      if (derived.ok) {
        const { willRun } = derived.plan;
        // Every script of a skill shares its folder: the first derived names it, with what it holds.
        // Security: the asker's own folder (its subject's, or `anyone`), never another subject's.
        if (data === undefined && derived.plan.data && willRun.data) {
          const key: [string, string] = [skill.name, dataWho(identity?.subject)];
          const record = dataBase ? readDataRecord(dataBase, key) : undefined;
          data = {
            ...willRun.data,
            folder: key.join('/'),
            ...(record ? { used: { bytes: record.bytes, entries: record.entries, full: record.full } } : {}),
          };
        }
        const info: ScriptInfo = {
          ...base,
          granted: true,
          runnable: refusedWhy === undefined,
          envNames: willRun.envNames,
          envNotSet: willRun.envNotSet ?? [],
        };
        if (refusedWhy !== undefined) info.why = refusedWhy;
        if (willRun.envWarning !== undefined) info.envWarning = willRun.envWarning;
        if (willRun.egress !== undefined) info.egress = willRun.egress;
        if (willRun.egressRules !== undefined) info.egressRules = willRun.egressRules;
        if (willRun.egressWarning !== undefined) info.egressWarning = willRun.egressWarning;
        if (willRun.egressNote !== undefined) info.egressNote = willRun.egressNote;
        if (willRun.deps !== undefined) info.deps = willRun.deps;
        if (willRun.secrets !== undefined) info.secrets = willRun.secrets;
        if (willRun.secretsNotBound !== undefined) info.secretsNotBound = willRun.secretsNotBound;
        if (willRun.secretsWarning !== undefined) info.secretsWarning = willRun.secretsWarning;
        infos.push(info);
      } else {
        infos.push({
          ...base,
          granted: derived.code !== 'NOT_GRANTED',
          runnable: false,
          why: derived.message,
          envNames: [],
          envNotSet: [],
          ...(derived.deps?.length ? { deps: derived.deps } : {}),
        });
      }
    }
    const content =
      read === undefined ? undefined : read.ok ? { digest: read.content.digest, fileCount: read.content.files.length } : { why: read.why };
    skills.push({
      name: skill.name,
      scripts: infos,
      declarationProblems: problems,
      ...(origin ? { declarationFrom: origin.from } : {}),
      ...(origin?.pinned ? { declarationPinned: true } : {}),
      ...(content ? { content } : {}),
      ...(data ? { data } : {}),
    });
  }
  const result: DescribeResult = {
    protocol: PROTOCOL_VERSION,
    isolation: {
      level: platform.isolation,
      detail: platform.isolationDetail,
      mechanisms: platform.mechanisms,
      memoryBytes: ctx.memoryBytes,
    },
    interpreters: [...platform.interpreters].map(([name, resolved]) =>
      'path' in resolved ? { name, available: true } : { name, available: false, why: resolved.why },
    ),
    environ: environ.detail === undefined ? { scrubbed: environ.scrubbed } : { scrubbed: environ.scrubbed, detail: environ.detail },
    runsAllowed: refusedWhy === undefined,
    grantFrom: grantFrom(readGrantSource(ctx.env as NodeJS.ProcessEnv)),
    skills,
  };
  if (refusedWhy !== undefined) result.runsRefusedWhy = refusedWhy;
  return result;
}
