/**
 * @module `skill-mcp pull --git`: fetch (git.ts), plan (git-plan.ts), then each skill through the
 * shared steps (one.ts), the lock pinning the commit.
 */
import { join } from 'node:path';
import type { GitSource, PullArgs } from './args.js';
import { GitError, openRepo, type Repo } from './git.js';
import { planGit, readGitSkill, type GitDiscovery, type GitSkill } from './git-plan.js';
import { digestsOf, sameDigests, type Lock, type LockSource } from './lock.js';
import { Report, describeSource, lockedSource, pullOne, summary } from './one.js';

/** The commit the lock pins for this git source (and these skills), or why --locked cannot run. */
function lockedCommit(lock: Lock, source: LockSource, wanted: ReadonlySet<string>): { commit: string; names: Set<string> } | string {
  const key = JSON.stringify(source);
  const entries = Object.entries(lock.skills).filter(
    ([name, s]) => JSON.stringify(s.source) === key && (wanted.size === 0 || wanted.has(name)),
  );
  const commits = new Set(entries.map(([, s]) => s.commit));
  if (entries.length === 0 || commits.has(undefined))
    return `the lock has no commit for ${describeSource(source)}${wanted.size ? ' and these skills' : ''}; pull once without --locked`;
  if (commits.size > 1)
    return `the lock pins skills of ${describeSource(source)} at ${commits.size} different commits; pull them without --locked, or name the skills of one commit with --skill`;
  return { commit: [...commits][0]!, names: new Set(entries.map(([name]) => name)) };
}

/**
 * A pull from a git repository. --locked asks the source for the locked commit by its id (git
 * protocol v2 servers, and GitHub's, serve any commit they still hold); if that is refused, the
 * ref is fetched and must still point at that commit. Otherwise the pull fails and writes nothing.
 */
export async function pullGit(args: PullArgs, git: GitSource, dir: string, lock: Lock): Promise<number> {
  const source = lockedSource(git) as Extract<LockSource, { git: string }>;
  const pin = git.locked ? lockedCommit(lock, source, args.skills) : undefined;
  if (typeof pin === 'string') {
    process.stderr.write(`skill-mcp pull: --locked: ${pin}\n`);
    return 1;
  }
  let repo: Repo;
  try {
    try {
      repo = openRepo(git.git, pin ? pin.commit : (git.ref ?? 'HEAD'));
    } catch (error) {
      if (!pin || !(error instanceof GitError)) throw error;
      repo = openRepo(git.git, source.ref);
      if (repo.commit !== pin.commit) {
        repo.close();
        throw new GitError(
          `the locked commit ${pin.commit} is gone from ${source.git} (${error.message}) and ${source.ref} is now ${repo.commit}; nothing was changed. Pull without --locked to move the pin`,
        );
      }
    }
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    process.stderr.write(
      `skill-mcp pull: could not fetch ${describeSource(source)}${pin ? ` at the locked commit ${pin.commit}` : ''}: ${error.message}\n`,
    );
    return 1;
  }
  const report = new Report();
  try {
    const selfName = source.path
      ? source.path.slice(source.path.lastIndexOf('/') + 1)
      : (new URL(source.git).pathname.replace(/\/+$/, '').split('/').pop() ?? '').replace(/\.git$/, '');
    const wanted = pin && args.skills.size === 0 ? pin.names : args.skills;
    let found: GitDiscovery;
    try {
      found = planGit(repo, source.path, selfName, wanted);
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      process.stderr.write(`skill-mcp pull: ${describeSource(source)}: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(
      `pull: ${found.skills.length + found.refused.length} skill(s) from ${describeSource(source)} at ${repo.commit} into ${dir}\n`,
    );
    for (const refusal of found.refused) report.line('refused', refusal.name, `${refusal.why}; nothing written`);
    for (const name of wanted) {
      if (!found.skills.some((s) => s.name === name) && !found.refused.some((r) => r.name === name))
        report.line('refused', name, `the repository has no skill of that name at ${repo.commit}`);
    }
    for (const skip of found.skipped) report.line('skipped', `${skip.skill}/${skip.path}`, `${skip.why}; the skill is pulled without it`);
    const opened = repo;
    for (const skill of [...found.skills].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (pin && !sameDigests(lock.skills[skill.name]?.files ?? {}, digestsOf(skill.files))) {
        report.line('refused', skill.name, `its files at the locked commit differ from the digests the lock records; nothing written`);
        continue;
      }
      await pullOne(async (s) => readGitSkill(opened, s as GitSkill), args, dir, lock, skill, report, { commit: repo.commit });
    }
    if (args.skills.size === 0 && !pin) {
      const key = JSON.stringify(source);
      for (const [name, locked] of Object.entries(lock.skills)) {
        if (
          JSON.stringify(locked.source) !== key ||
          found.skills.some((s) => s.name === name) ||
          found.refused.some((r) => r.name === name)
        )
          continue;
        report.line('gone', name, `no longer in the repository at ${repo.commit}; ${join(dir, name)} is left as it is`);
      }
    }
  } finally {
    repo.close();
  }
  return summary(report);
}
