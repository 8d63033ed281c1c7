/**
 * @module `skill-mcp pull`: copies skills from an MCP server or a git repository (git-pull.ts)
 * into a skills folder (Claude Code's `~/.claude/skills`, Codex's, Cursor's...). Discover and plan
 * (remote.ts), compare with the lock and the folder and write whole (one.ts, install.ts), download
 * and check (download.ts), record (lock.ts).
 * The report goes to stdout, one line a skill; progress of big skills to stderr.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PULL_USAGE, parsePullArgs, type PullArgs } from './args.js';
import { connect, type Connection } from './connect.js';
import { downloadSkill } from './download.js';
import { pullGit } from './git-pull.js';
import { pullIndex } from './index-pull.js';
import { LockError, readLock } from './lock.js';
import { discover, type Discovery } from './remote.js';
import { errorText } from './error-text.js';
import { notAllowed } from './allow.js';
import { Report, describeSource, lockedSource, pullOne, summary } from './one.js';

export { lockedSource } from './one.js';

async function pull(args: PullArgs): Promise<number> {
  const where = lockedSource(args.source);
  const allow = process.env['SKILL_MCP_PULL_ALLOW'];
  const refusedSource =
    'git' in where
      ? notAllowed(where.git, allow)
      : 'url' in where
        ? notAllowed(where.url, allow)
        : 'index' in where
          ? notAllowed(where.index, allow)
          : undefined;
  if (refusedSource) {
    process.stderr.write(`skill-mcp pull: ${refusedSource}\n`);
    return 1;
  }
  const dir = resolve(args.to);
  mkdirSync(dir, { recursive: true });
  const lock = readLock(dir);
  if ('git' in args.source) return pullGit(args, args.source, dir, lock);
  if ('index' in args.source) return pullIndex(args, args.source, dir, lock);
  let connection: Connection;
  try {
    connection = await connect(args.source, args.headers);
  } catch (error) {
    process.stderr.write(`skill-mcp pull: could not connect to ${describeSource(args.source)}: ${errorText(error)}\n`);
    return 1;
  }
  const report = new Report();
  try {
    let found: Discovery;
    try {
      found = await discover(connection.client, args.skills);
    } catch (error) {
      process.stderr.write(`skill-mcp pull: could not list the skills of ${describeSource(args.source)}: ${errorText(error)}\n`);
      return 1;
    }
    process.stderr.write(
      `pull: ${found.skills.length + found.refused.length} skill(s) from ${describeSource(args.source)} (${found.via}) into ${dir}\n`,
    );
    for (const refusal of found.refused) report.line('refused', refusal.name, `${refusal.why}; nothing written`);
    for (const n of found.nested ?? [])
      report.line(
        'nested',
        n.name,
        `${n.uri} lies inside the skill "${n.outer}"; it is pulled as files of "${n.outer}" (where the server lists them), not as a skill of its own (docs/nested-skills.md)`,
      );
    for (const name of args.skills) {
      if (
        !found.skills.some((s) => s.name === name) &&
        !found.refused.some((r) => r.name === name) &&
        !(found.nested ?? []).some((n) => n.name === name)
      )
        report.line('refused', name, 'the server does not publish a skill of that name');
    }
    for (const skill of [...found.skills].sort((a, b) => (a.name < b.name ? -1 : 1)))
      await pullOne((s, progress) => downloadSkill(connection.client, s, progress), args, dir, lock, skill, report);
    if (args.skills.size === 0) {
      const source = JSON.stringify(lockedSource(args.source));
      for (const [name, locked] of Object.entries(lock.skills)) {
        if (
          JSON.stringify(locked.source) !== source ||
          found.skills.some((s) => s.name === name) ||
          found.refused.some((r) => r.name === name)
        )
          continue;
        report.line('gone', name, `no longer published by this server; ${join(dir, name)} is left as it is`);
      }
    }
  } finally {
    await connection.close();
  }
  return summary(report);
}

export async function pullMain(argv: string[]): Promise<void> {
  const parsed = parsePullArgs(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(`${PULL_USAGE}\n`);
    return;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`skill-mcp pull: ${parsed.message}\n${PULL_USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    process.exitCode = await pull(parsed.args);
  } catch (error) {
    if (!(error instanceof LockError)) throw error;
    process.stderr.write(`skill-mcp pull: ${error.message}\n`);
    process.exitCode = 1;
  }
}
