/**
 * @module Everything the server would report about some folders of skills, from the code the
 * server runs: discovery (shared/discover.ts) and each skill's scan (server/catalog/skill.ts:
 * frontmatter, declaration, manifest, publication rules). Then the authoring rules on what the
 * scan found. Nothing here re-decides a catalog rule; it only locates and reports.
 */
import { lstatSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { declarationsDirUnusable, listDeclarationsDir, MAX_DECLARATION_ENTRIES, skillOfEntry } from '../../shared/declaration-files.js';
import { OPERATOR_PLACE, SIDECAR_FILE, strayDeclarationProblems } from '../../shared/declaration-source.js';
import { discoverSkills, type DiscoveredSkill } from '../../shared/discover.js';
import { readCatalogLimits, type CatalogLimits } from '../../shared/limits.js';
import type { Problem } from '../../shared/problems.js';
import type { SettingIssue } from '../../shared/settings-schema.js';
import { declarationsDirOf } from '../../shared/settings.js';
import { scanSkill, type ScanResult } from '../../server/catalog/skill.js';
import type { Finding, Hit } from './finding.js';
import { keyLine, mentionLine, reasonKey } from './frontmatter-lines.js';
import { Places } from './places.js';
import { ruleById, serverRuleId } from './rules.js';
import { checkSkillFiles } from './skill-files.js';

export interface Collected {
  findings: Finding[];
  skills: number;
  /** Text files the authoring rules read (binary and oversized files are not). */
  filesScanned: number;
  /** Served files not read as text: binary, not UTF-8, or too large. */
  filesNotScanned: number;
}

/** Says what a declared script's path is on disk, beside the catalog's "not a served regular file". */
function onDisk(realDir: string, script: string): string {
  if (script.split('/').some((s) => s.startsWith('.'))) return 'a hidden path, which is never served';
  const info = lstatSync(join(realDir, ...script.split('/')), { throwIfNoEntry: false });
  if (!info) return 'nothing is there';
  if (info.isDirectory()) return 'it is a directory';
  if (info.isSymbolicLink()) return 'it is a link leading out of the skill or nowhere';
  if (!info.isFile()) return 'it is a special file (FIFO, socket or device)';
  return 'it is a regular file the walk did not list (see the other problems for it)';
}

function finding(ruleId: string, message: string, path: string, extra: Partial<Finding> = {}): Finding {
  return { ruleId, level: ruleById(ruleId).level, message, path, ...extra };
}

/** One skill's catalog problems as findings, each at the most precise place known. */
function scanFindings(found: DiscoveredSkill, scan: ScanResult, skillMd: string | undefined, places: Places): Finding[] {
  const out: Finding[] = [];
  const skill = found.name;
  const mdPath = places.fromDisplay(`${found.displayPath}/SKILL.md`, found.root);
  const at = (key: string | undefined): Partial<Finding> => {
    const line = key && skillMd !== undefined ? keyLine(skillMd, key) : undefined;
    return line !== undefined ? { line, column: 1 } : {};
  };
  for (const problem of scan.problems) {
    const path = places.fromDisplay(problem.path, found.root);
    const id = serverRuleId(problem.reason);
    if (problem.reason === 'not-published' && scan.unpublished) {
      // One finding per reason, so each carries its own figure and place.
      for (const reason of scan.unpublished) {
        const key = reasonKey(reason);
        const message = `kept out of skill:// (served by the tools and prompts only): ${reason}`;
        out.push(finding(id, message, key ? mdPath : path, { ...at(key), skill }));
      }
      continue;
    }
    if (problem.reason === 'malformed-frontmatter') {
      const where = /\(line (\d+), column (\d+)\)/.exec(problem.detail);
      out.push(finding(id, problem.detail, path, { ...(where ? { line: Number(where[1]), column: Number(where[2]) } : {}), skill }));
      continue;
    }
    if (problem.reason === 'declaration') {
      // A declaration file's own parse error carries its line; a SKILL.md one points at the block.
      const where = /\(line (\d+), column (\d+)\)/.exec(problem.detail);
      const located = where ? { line: Number(where[1]), column: Number(where[2]) } : {};
      if (problem.path.startsWith(`${OPERATOR_PLACE}/`) && places.declarationsDir !== undefined) {
        out.push(
          finding(id, problem.detail, places.fromAbsolute(join(places.declarationsDir, problem.path.slice(OPERATOR_PLACE.length + 1))), {
            ...located,
            skill,
          }),
        );
      } else if (problem.path.endsWith(`/${SIDECAR_FILE}`)) out.push(finding(id, problem.detail, path, { ...located, skill }));
      else out.push(finding(id, problem.detail, path, { ...at('mcp-host'), skill }));
      continue;
    }
    if (problem.reason === 'declared-script-missing') {
      const script = problem.path.slice(found.displayPath.length + 1);
      const line = skillMd !== undefined ? mentionLine(skillMd, script) : undefined;
      const message = `${problem.detail} (on disk: ${onDisk(found.realDir, script)})`;
      out.push(finding(id, message, line !== undefined ? mdPath : path, { ...(line !== undefined ? { line, column: 1 } : {}), skill }));
      continue;
    }
    out.push(finding(id, problem.detail, path, { skill }));
  }
  return out;
}

/** Checks the skills under `roots` (as given on the command line) and returns every finding. */
export async function collect(roots: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Collected> {
  const { limits, errors } = readCatalogLimits(env);
  const issues: SettingIssue[] = [];
  const declarationsDir = declarationsDirOf(env, issues);
  const places = new Places(roots, cwd, declarationsDir);
  const findings: Finding[] = [...errors, ...issues.map((issue) => issue.message)].map((detail) =>
    finding(serverRuleId('config'), detail, '.'),
  );
  const discovery = await discoverSkills(
    roots.map((root) => resolve(cwd, root)),
    limits.maxSkills,
  );
  for (const problem of discovery.problems) findings.push(discoveryFinding(problem, places));
  findings.push(...operatorFolderFindings(declarationsDir, new Set(discovery.skills.map((s) => s.name)), places));
  let filesScanned = 0;
  let filesNotScanned = 0;
  for (const found of discovery.skills) {
    const result = await checkOne(found, limits, places, declarationsDir);
    findings.push(...result.findings);
    filesScanned += result.filesScanned;
    filesNotScanned += result.filesNotScanned;
  }
  return { findings, skills: discovery.skills.length, filesScanned, filesNotScanned };
}

/** With SKILL_MCP_DECLARATIONS set: the folder itself, and every file in it that declares no skill checked here. */
function operatorFolderFindings(dir: string | undefined, served: Set<string>, places: Places): Finding[] {
  if (dir === undefined) return [];
  const id = serverRuleId('declaration');
  const unusable = declarationsDirUnusable(dir);
  if (unusable !== undefined)
    return [finding(id, `SKILL_MCP_DECLARATIONS ${unusable}; a server with it runs no skill's scripts`, places.fromAbsolute(dir))];
  const listed = listDeclarationsDir(dir);
  const out = strayDeclarationProblems(listed.names, (name) => served.has(name), skillOfEntry).map(({ entry, detail }) =>
    finding(id, detail, places.fromAbsolute(join(dir, entry))),
  );
  if (listed.limited)
    out.push(
      finding(id, `the folder holds more than ${MAX_DECLARATION_ENTRIES} entries; only the first were checked`, places.fromAbsolute(dir)),
    );
  return out;
}

function discoveryFinding(problem: Problem, places: Places): Finding {
  return finding(serverRuleId(problem.reason), problem.detail, places.fromDisplay(problem.path));
}

async function checkOne(
  found: DiscoveredSkill,
  limits: CatalogLimits,
  places: Places,
  declarationsDir: string | undefined,
): Promise<Collected> {
  const scan = await scanSkill(found, limits, declarationsDir);
  const files = await checkSkillFiles(found, scan.record, limits);
  const findings = scanFindings(found, scan, files.skillMd, places);
  const located = (path: string, hits: Hit[]): Finding[] =>
    hits.map((hit) =>
      finding(hit.ruleId, hit.message, places.fromDisplay(`${found.displayPath}/${path}`, found.root), {
        ...(hit.line !== undefined ? { line: hit.line } : {}),
        ...(hit.column !== undefined ? { column: hit.column } : {}),
        skill: found.name,
      }),
    );
  for (const [path, hits] of files.hits) findings.push(...located(path, hits));
  // A SKILL.md below the top is a file of this skill, never a skill of its own (docs/nested-skills.md).
  for (const file of scan.record?.files ?? []) {
    if (!file.path.endsWith('/SKILL.md')) continue;
    findings.push(
      ...located(file.path, [
        {
          ruleId: 'advice/nested-skill',
          message: `a SKILL.md inside the skill "${found.name}" is served as one of its files, not as a skill of its own (nor do agents load it as one); move its folder to the top of the skills folder to make it a skill`,
        },
      ]),
    );
  }
  return { findings, skills: 1, filesScanned: files.filesScanned, filesNotScanned: files.filesNotScanned };
}
