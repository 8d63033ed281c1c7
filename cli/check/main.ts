/**
 * @module `skill-mcp check [--format text|json|sarif] [--strict] [--fix] PATH...`: what the server would
 * report about these skills, plus authoring risks, before anyone serves them. Thin: parse, (fix,)
 * collect, print, exit (0 no errors, 1 errors, 2 usage or an unreadable PATH).
 */
import { readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { discoverSkills } from '../../shared/discover.js';
import { readCatalogLimits } from '../../shared/limits.js';
import { moveDeclaration } from './fix.js';
import { Places } from './places.js';
import { CHECK_USAGE, parseCheckArgs } from './args.js';
import { collect } from './collect.js';
import { sortFindings, type Finding } from './finding.js';
import { countLevels, formatJson, formatSarif, formatText, type Report } from './report.js';
import { RULES } from './rules.js';

const HELP = `${CHECK_USAGE}

Checks skill folders before they are served. Each PATH is a skill folder (it holds SKILL.md) or a
folder of skills (<root>/<name>/SKILL.md or <root>/skills/<name>/SKILL.md), as the server accepts
them; all PATHs are checked together, as one server configured with them would see them.

Reports everything the server would (the same code: discovery, frontmatter, the mcp-host
declaration — in SKILL.md, in mcp-host.yaml, and with SKILL_MCP_DECLARATIONS set the operator's
<skill>.yaml files —, the rules that keep a skill out of skill://), then the Agent Skills
specification's frontmatter fields and authoring risks: hidden Unicode, credentials, declared
scripts that cannot run, dead links, instructions hidden in comments, and advice.
SKILL_MCP_MAX_* limits apply as they would to the server.

  --format text   one line per finding: path:line:col: level rule-id message, then a summary (default)
  --format json   {version, findings: [{ruleId, level, message, path, line?, column?, skill?}], summary}
  --format sarif  SARIF 2.1.0, for code-scanning tools
  --strict        warnings count as errors (notes stay notes)
  --fix           first move each frontmatter mcp-host: block into mcp-host.yaml beside SKILL.md
                  (refused where mcp-host.yaml exists; the rest of SKILL.md is kept byte for byte),
                  saying what it did, then check

Paths are relative to the current directory; columns count UTF-16 code units.
Exit status: 0 no errors, 1 at least one error, 2 usage error or a PATH that cannot be read.

Rules:
${RULES.map((rule) => `  ${rule.id.padEnd(31)} ${rule.level.padEnd(8)} ${rule.short}`).join('\n')}
`;

/** Why `path` cannot be checked, or undefined when it is a readable folder. */
function unreadable(path: string): string | undefined {
  try {
    if (!statSync(path).isDirectory()) return 'it is not a folder (name the folder that holds SKILL.md)';
    readdirSync(path);
    return undefined;
  } catch (error) {
    return `it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
}

export async function checkMain(argv: readonly string[]): Promise<void> {
  const args = parseCheckArgs(argv);
  if (args.kind === 'help') {
    process.stdout.write(HELP);
    return;
  }
  if (args.kind === 'usage') {
    process.stderr.write(`skill-mcp check: ${args.error}\n${CHECK_USAGE}\n(skill-mcp check --help lists the rules)\n`);
    process.exitCode = 2;
    return;
  }
  for (const path of args.paths) {
    const why = unreadable(path);
    if (why) {
      process.stderr.write(`skill-mcp check: ${JSON.stringify(path)}: ${why}\n`);
      process.exitCode = 2;
      return;
    }
  }
  if (args.fix) await fixAll(args.paths, args.format === 'text' ? process.stdout : process.stderr);
  const collected = await collect(args.paths, process.cwd(), process.env);
  // --strict: a warning is an error in every format, not only in the exit status.
  const findings: Finding[] = sortFindings(
    collected.findings.map((f) => (args.strict && f.level === 'warning' ? { ...f, level: 'error' } : f)),
  );
  const counts = countLevels(findings);
  const report: Report = {
    findings,
    summary: {
      skills: collected.skills,
      filesScanned: collected.filesScanned,
      filesNotScanned: collected.filesNotScanned,
      errors: counts.error,
      warnings: counts.warning,
      notes: counts.note,
      strict: args.strict,
    },
  };
  const format = { text: formatText, json: formatJson, sarif: formatSarif }[args.format];
  process.stdout.write(format(report));
  process.exitCode = counts.error > 0 ? 1 : 0;
}

/** --fix: each skill's frontmatter block moved into its sidecar; one line per skill touched (stderr when stdout is a report format). */
async function fixAll(paths: readonly string[], out: NodeJS.WritableStream): Promise<void> {
  const cwd = process.cwd();
  const { limits } = readCatalogLimits(process.env);
  const places = new Places(paths, cwd);
  const discovery = await discoverSkills(
    paths.map((path) => resolve(cwd, path)),
    limits.maxSkills,
  );
  for (const found of discovery.skills) {
    const outcome = moveDeclaration(found, limits.maxFrontmatterBytes);
    const md = places.fromDisplay(`${found.displayPath}/SKILL.md`, found.root);
    if (outcome.kind === 'moved')
      out.write(
        `fixed: ${md}: moved the mcp-host block (lines ${outcome.lines[0]}-${outcome.lines[1]}) into ${places.fromDisplay(`${found.displayPath}/mcp-host.yaml`, found.root)}\n`,
      );
    else if (outcome.kind === 'refused') out.write(`not fixed: ${md}: ${outcome.why}\n`);
  }
}
