/**
 * @module `skill-mcp pull --index`: read a discovery index (index-plan.ts), fetch and check every
 * skill it names, then put them in place only if none was refused: one digest that does not match,
 * one path the rules refuse, one bad archive, and nothing is written (the folder and the lock stay
 * as they were). The lock pins each skill to the digest the index published; `--locked` installs
 * exactly those digests or fails.
 */
import { join } from 'node:path';
import type { IndexSource, PullArgs } from './args.js';
import { FetchRefused, getChecked, isLoopbackHost, shownUrl } from './http-get.js';
import { IndexRefused, MAX_INDEX_BYTES, fetchIndexSkill, parseIndex, type IndexSkill } from './index-plan.js';
import { writeLock, type Lock } from './lock.js';
import { Report, lockedSource, pullOne, summary, type Deferred } from './one.js';
import type { RemoteSkill } from './remote.js';

function fail(message: string): number {
  process.stderr.write(`skill-mcp pull: ${message}\n`);
  return 1;
}

export async function pullIndex(args: PullArgs, index: IndexSource, dir: string, lock: Lock): Promise<number> {
  const source = lockedSource(index);
  const key = JSON.stringify(source);
  const indexUrl = new URL(index.index);
  const fromLoopback = isLoopbackHost(indexUrl.hostname);
  const lockedNames = Object.entries(lock.skills).filter(
    ([name, s]) => JSON.stringify(s.source) === key && (args.skills.size === 0 || args.skills.has(name)),
  );
  if (index.locked && (lockedNames.length === 0 || lockedNames.some(([, s]) => s.digest === undefined)))
    return fail(
      `--locked: the lock has no digests for ${shownUrl(indexUrl)}${args.skills.size ? ' and these skills' : ''}; pull once without --locked`,
    );
  let parsed: ReturnType<typeof parseIndex>;
  try {
    const got = await getChecked(indexUrl, MAX_INDEX_BYTES, fromLoopback);
    parsed = parseIndex(got.bytes.toString('utf8'), got.url);
  } catch (error) {
    if (error instanceof FetchRefused || error instanceof IndexRefused)
      return fail(`could not read the index: ${error.message}; nothing was changed`);
    throw error;
  }
  const wanted = index.locked && args.skills.size === 0 ? new Set(lockedNames.map(([name]) => name)) : args.skills;
  const pick = <T extends { name: string }>(list: T[]): T[] => (wanted.size === 0 ? list : list.filter((s) => wanted.has(s.name)));
  const skills = pick(parsed.skills);
  // Security: two entries that would be one folder are both refused, never first-wins.
  const count = new Map<string, number>();
  for (const s of skills) count.set(s.name.toLowerCase(), (count.get(s.name.toLowerCase()) ?? 0) + 1);
  if (index.locked) {
    for (const [name, locked] of lockedNames) {
      const now = skills.find((s) => s.name === name);
      if (!now)
        return fail(`--locked: the index no longer publishes "${name}"; nothing was changed. Pull without --locked to drop the pin`);
      if (now.digest !== locked.digest)
        return fail(
          `--locked: the index now publishes ${now.digest} for "${name}", the lock pins ${locked.digest}; nothing was changed. Pull without --locked to move the pin`,
        );
    }
  }
  process.stderr.write(`pull: ${skills.length + pick(parsed.refused).length} skill(s) from ${shownUrl(indexUrl)} into ${dir}\n`);
  const report = new Report();
  for (const refusal of pick(parsed.refused)) report.line('refused', refusal.name, refusal.why);
  for (const name of wanted) {
    if (!parsed.skills.some((s) => s.name === name) && !parsed.refused.some((r) => r.name === name))
      report.line('refused', name, 'the index does not publish a skill of that name');
  }
  const deferred: Deferred[] = [];
  for (const entry of [...skills].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (count.get(entry.name.toLowerCase())! > 1) {
      report.line('refused', entry.name, `more than one entry of the index would be the folder "${entry.name}"`);
      continue;
    }
    await pullEntry(entry, args, dir, lock, report, deferred, fromLoopback, key);
  }
  if (report.tally.refused > 0) {
    for (const d of deferred) {
      d.prepared.discard();
      process.stdout.write(`${'held'.padEnd(9)} ${d.name}: fetched and checked, not written: the pull is refused whole\n`);
    }
    process.stdout.write(`pull: nothing was written (${report.tally.refused} refused); ${join(dir)} is as it was\n`);
    return 1;
  }
  for (const d of deferred) {
    d.prepared.commit();
    d.finish();
  }
  if (args.skills.size === 0 && !index.locked) {
    for (const [name, locked] of Object.entries(lock.skills)) {
      if (JSON.stringify(locked.source) !== key || parsed.skills.some((s) => s.name === name)) continue;
      report.line('gone', name, `no longer in the index; ${join(dir, name)} is left as it is`);
    }
  }
  writeLock(dir, lock);
  return summary(report);
}

/** One index entry: unchanged by its digest without a download, or fetched, checked and prepared. */
async function pullEntry(
  entry: IndexSkill,
  args: PullArgs,
  dir: string,
  lock: Lock,
  report: Report,
  deferred: Deferred[],
  fromLoopback: boolean,
  key: string,
): Promise<void> {
  const uri = entry.form === 'files' ? new URL('SKILL.md', entry.base).href : shownUrl(entry.url);
  const locked = lock.skills[entry.name];
  const pin = { digest: entry.digest };
  if (locked && JSON.stringify(locked.source) === key && locked.digest === entry.digest) {
    // Same digest as pulled: the same bytes. The folder decides (unchanged, or edited here).
    const skill: RemoteSkill = {
      name: entry.name,
      uri,
      via: 'well-known-index',
      files: Object.entries(locked.files).map(([path, digest]) => ({ path, uri: path, size: 0, digest })),
    };
    await pullOne(async () => (await fetchIndexSkill(entry, fromLoopback)).files, args, dir, lock, skill, report, pin, deferred);
    return;
  }
  let fetched: Awaited<ReturnType<typeof fetchIndexSkill>>;
  try {
    fetched = await fetchIndexSkill(entry, fromLoopback);
  } catch (error) {
    if (error instanceof FetchRefused) return report.line('refused', entry.name, error.message);
    throw error;
  }
  for (const skip of fetched.skipped) report.line('skipped', `${fetched.name}/${skip.path}`, `${skip.why}; the skill is pulled without it`);
  const skill: RemoteSkill = { name: fetched.name, uri, via: 'well-known-index', files: fetched.planned };
  await pullOne(async () => fetched.files, args, dir, lock, skill, report, pin, deferred);
}
