/**
 * @module The three output formats of `skill-mcp check`, from one report. Pure: text in, text out.
 *
 * - text: `path:line:col: level rule-id message`, one line per finding, then a summary line;
 * - json: `{version, findings, summary}` (version 1; fields only ever added);
 * - sarif: SARIF 2.1.0, one run, every rule in the driver's table, one result per finding.
 */
import type { Finding, Level } from './finding.js';
import { RULES } from './rules.js';
import { plural } from './text.js';

export const REPORT_VERSION = 1;
export const SARIF_SCHEMA = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json';
const TOOL_VERSION = '0.1.0';

export interface Summary {
  skills: number;
  filesScanned: number;
  filesNotScanned: number;
  errors: number;
  warnings: number;
  notes: number;
  strict: boolean;
}

export interface Report {
  findings: Finding[];
  summary: Summary;
}

export function countLevels(findings: readonly Finding[]): Record<Level, number> {
  const counts: Record<Level, number> = { error: 0, warning: 0, note: 0 };
  for (const f of findings) counts[f.level]++;
  return counts;
}

function place(f: Finding): string {
  if (f.line === undefined) return f.path;
  return f.column === undefined ? `${f.path}:${f.line}` : `${f.path}:${f.line}:${f.column}`;
}

export function formatText(report: Report): string {
  const lines = report.findings.map((f) => `${place(f)}: ${f.level} ${f.ruleId} ${f.message}`);
  const s = report.summary;
  const counts = `${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')}, ${plural(s.notes, 'note')}`;
  const scope = `${plural(s.skills, 'skill')} (${plural(s.filesScanned, 'text file')} read${s.filesNotScanned > 0 ? `, ${s.filesNotScanned.toLocaleString('en-US')} binary or oversized not read` : ''})`;
  lines.push(
    `${report.findings.length === 0 ? 'no findings' : counts} in ${scope}${s.strict ? '; --strict: warnings count as errors' : ''}`,
  );
  return `${lines.join('\n')}\n`;
}

export function formatJson(report: Report): string {
  return `${JSON.stringify({ version: REPORT_VERSION, findings: report.findings, summary: report.summary }, null, 2)}\n`;
}

/** A relative path as a URI reference: each segment percent-encoded, `/` kept. */
function uriOf(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/');
}

export function formatSarif(report: Report): string {
  const index = new Map(RULES.map((rule, i) => [rule.id, i]));
  const log = {
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'skill-mcp',
            version: TOOL_VERSION,
            rules: RULES.map((rule) => ({
              id: rule.id,
              shortDescription: { text: rule.short },
              help: { text: rule.help },
              defaultConfiguration: { level: rule.level },
            })),
          },
        },
        columnKind: 'utf16CodeUnits',
        results: report.findings.map((f) => ({
          ruleId: f.ruleId,
          ruleIndex: index.get(f.ruleId)!,
          level: f.level,
          message: { text: f.message },
          locations: [
            {
              physicalLocation: {
                artifactLocation: { uri: uriOf(f.path) },
                ...(f.line !== undefined
                  ? { region: { startLine: f.line, ...(f.column !== undefined ? { startColumn: f.column } : {}) } }
                  : {}),
              },
            },
          ],
          ...(f.skill !== undefined ? { properties: { skill: f.skill } } : {}),
        })),
      },
    ],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}
