/**
 * @module `skill-mcp check [--format text|json|sarif] [--strict] PATH...`: what the server would
 * report about these skills, plus authoring risks, before anyone serves them. Thin: parse, collect,
 * print, exit (0 no errors, 1 errors, 2 usage or an unreadable PATH).
 */
import { readdirSync, statSync } from 'node:fs';
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
declaration, the rules that keep a skill out of skill://), then authoring risks: hidden Unicode,
credentials, declared scripts that cannot run, dead links, instructions hidden in comments, and
advice. SKILL_MCP_MAX_* limits apply as they would to the server.

  --format text   one line per finding: path:line:col: level rule-id message, then a summary (default)
  --format json   {version, findings: [{ruleId, level, message, path, line?, column?, skill?}], summary}
  --format sarif  SARIF 2.1.0, for code-scanning tools
  --strict        warnings count as errors (notes stay notes)

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
  const collected = await collect(args.paths, process.cwd(), process.env);
  // --strict: a warning is an error in every format, not only in the exit status.
  const findings: Finding[] = sortFindings(collected.findings.map((f) => (args.strict && f.level === 'warning' ? { ...f, level: 'error' } : f)));
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
