/**
 * @module What the `skill-mcp check` suites share: fixture skills written into a fresh temp folder
 * (which is also the working directory check runs in), and the real built bin run on them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEachFile } from '../file-hooks.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(REPO, 'dist/skill-mcp.js');

const made: string[] = [];
afterEachFile(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder to write skills into and run check from. */
export function workspace(): string {
  if (!existsSync(BIN)) throw new Error('dist/skill-mcp.js is missing: run `node build.mjs` first');
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-check-'));
  made.push(dir);
  return dir;
}

/** Writes `files` (path → content) under `dir`, creating folders. */
export function write(dir: string, files: Record<string, string | Buffer>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

export interface SkillMdOptions {
  name: string;
  description?: string;
  /**
   * A `when_to_use:` line (not an Agent Skills field: check warns); by default a `license: MIT`
   * line stands in its place, so line numbers stay; null leaves the line out.
   */
  whenToUse?: string | null;
  /** Extra frontmatter lines (YAML). */
  extra?: string;
  body?: string;
}

/** A SKILL.md that passes every rule unless the options say otherwise. */
export function skillMd(o: SkillMdOptions): string {
  const lines = [
    '---',
    `name: ${o.name}`,
    `description: ${o.description ?? 'Formats release notes. Use when the user asks for a changelog entry.'}`,
  ];
  if (o.whenToUse !== null) lines.push(o.whenToUse === undefined ? 'license: MIT' : `when_to_use: ${o.whenToUse}`);
  if (o.extra) lines.push(o.extra);
  lines.push('---', '', o.body ?? '# Release notes\n\nList the changes, newest first.\n');
  return lines.join('\n');
}

export interface CheckRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/skill-mcp.js check ...args` in `cwd` with a minimal environment. */
export function runCheck(cwd: string, args: string[], env: Record<string, string> = {}): CheckRun {
  const r = spawnSync(process.execPath, [BIN, 'check', ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface JsonFinding {
  ruleId: string;
  level: 'error' | 'warning' | 'note';
  message: string;
  path: string;
  line?: number;
  column?: number;
  skill?: string;
}

export interface JsonReport {
  version: number;
  findings: JsonFinding[];
  summary: {
    skills: number;
    filesScanned: number;
    filesNotScanned: number;
    errors: number;
    warnings: number;
    notes: number;
    strict: boolean;
  };
}

/** Runs check with `--format json` and parses the report. */
export function checkJson(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): JsonReport & { status: number | null; stdout: string } {
  const run = runCheck(cwd, ['--format', 'json', ...args], env);
  if (run.stderr !== '') throw new Error(`check wrote to stderr: ${run.stderr}`);
  return { ...(JSON.parse(run.stdout) as JsonReport), status: run.status, stdout: run.stdout };
}

/** The findings of one rule. */
export function ofRule(report: JsonReport, ruleId: string): JsonFinding[] {
  return report.findings.filter((f) => f.ruleId === ruleId);
}
