/**
 * The runner remembers its skill roots' listings (shared/folder-listing.ts) so finding a skill by
 * name does not read 5,000 entries per run. A remembered listing must never hide a change: an entry
 * added, removed or renamed changes the folder's stat, and a listing read in the same timestamp
 * tick as the last change it saw (where a later change could keep the very same times) is read
 * again until it has settled — git's "racily clean" rule. The rule is driven here with a clock and
 * a folder state the test controls; the real-filesystem cases are in the second block.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { discoverSkills, findSkillByName } from '../../shared/discover.js';
import { FolderListings, folderState, readFolder, SETTLE_MS, type FolderListing } from '../../shared/folder-listing.js';

const listingOf = (...names: string[]): FolderListing => ({
  entries: names.map((name) => ({ name, link: false })),
  links: [],
  byName: new Map(names.map((n, i) => [n, i])),
});
const names = (l: FolderListing): string[] => l.entries.map((e) => e.name);

/** A folder whose state (its stat) and contents the test sets separately, and a clock it moves. */
function fakeFolder() {
  const fake = { clock: 0, state: 'S1', contents: ['a'], reads: 0, changeDuringRead: false };
  const listings = new FolderListings(
    SETTLE_MS,
    () => fake.clock,
    () => fake.state,
    () => {
      fake.reads++;
      if (fake.changeDuringRead) fake.state = `${fake.state}'`;
      return listingOf(...fake.contents);
    },
  );
  return { fake, listings };
}

describe('a remembered listing is trusted only once it cannot hide a change (racily clean)', () => {
  it("a change that keeps the folder's times, made in the tick the listing was read, is seen: a young listing is read again", () => {
    const { fake, listings } = fakeFolder();
    expect(names(listings.read('/r'))).toEqual(['a']);
    // Same stat, new contents: a second change within the filesystem's timestamp step.
    fake.contents = ['a', 'dup-link'];
    fake.clock = SETTLE_MS - 1;
    expect(names(listings.read('/r'))).toEqual(['a', 'dup-link']);
    expect(fake.reads).toBe(2);
  });

  it('a listing read after the folder state settled is reused while the stat stays the same', () => {
    const { fake, listings } = fakeFolder();
    listings.read('/r'); // first seen at 0
    fake.clock = SETTLE_MS; // read again, now settled: this one is trusted
    listings.read('/r');
    fake.clock = SETTLE_MS * 5;
    listings.read('/r');
    listings.read('/r');
    expect(fake.reads).toBe(2);
  });

  it('any stat change (an entry added, removed or renamed) makes the next read list the folder again, and restarts the settling', () => {
    const { fake, listings } = fakeFolder();
    listings.read('/r');
    fake.clock = SETTLE_MS;
    listings.read('/r');
    fake.state = 'S2';
    fake.contents = ['a', 'b'];
    fake.clock = SETTLE_MS * 2;
    expect(names(listings.read('/r'))).toEqual(['a', 'b']);
    // S2 was first seen just now: not trusted yet, so a same-tick change is still seen.
    fake.contents = ['a', 'b', 'c'];
    expect(names(listings.read('/r'))).toEqual(['a', 'b', 'c']);
    expect(fake.reads).toBe(4);
  });

  it('a folder that changed while it was being listed is not remembered', () => {
    const { fake, listings } = fakeFolder();
    fake.clock = SETTLE_MS * 10;
    fake.changeDuringRead = true;
    listings.read('/r');
    listings.read('/r');
    fake.changeDuringRead = false;
    fake.clock = SETTLE_MS * 20;
    listings.read('/r');
    expect(fake.reads).toBe(3);
  });

  it('a folder that cannot be read throws as readdir does, and is not remembered', () => {
    const listings = new FolderListings();
    expect(() => listings.read(join(tmpdir(), `no-such-folder-${process.pid}`))).toThrow(/ENOENT/);
  });
});

const base = mkdtempSync(join(tmpdir(), 'folder-listing-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function skill(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), '---\nname: x\ndescription: x\n---\n');
}

describe('on a real folder, a remembered listing never lets a run find what full discovery refuses', () => {
  it('hidden entries and files are not candidates; links are marked', () => {
    const dir = join(base, 'kinds');
    skill(join(dir, 'plain'));
    skill(join(dir, '.hidden'));
    writeFileSync(join(dir, 'file.txt'), 'x');
    symlinkSync('plain', join(dir, 'alias'));
    const listing = readFolder(dir);
    expect(names(listing).sort()).toEqual(['alias', 'plain']);
    expect(listing.links.map((i) => listing.entries[i]!.name)).toEqual(['alias']);
    expect(folderState(dir)).toMatch(/^\d+:\d+:\d+:\d+:\d+:\d+$/);
  });

  it('after the listing settled and is reused: a link making a duplicate refuses the name, an added skill is found, a removed or renamed one is not', async () => {
    const root = join(base, 'root');
    const elsewhere = join(root, 'vendor');
    skill(join(root, 'alpha'));
    skill(join(root, 'beta'));
    mkdirSync(elsewhere);
    const listings = new FolderListings();
    const find = (name: string) => findSkillByName([root], name, 100, listings);
    expect((await find('alpha'))?.name).toBe('alpha');
    // Let the root's state settle (real clock), then read it once more: now it is reused.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 100));
    expect((await find('alpha'))?.name).toBe('alpha');

    // Attack: a second directory named alpha, reached through a link added to the root.
    skill(join(elsewhere, 'alpha'));
    symlinkSync(join(elsewhere, 'alpha'), join(root, 'innocent'));
    expect(await find('alpha')).toBeUndefined();
    expect((await discoverSkills([root], 100)).skills.find((s) => s.name === 'alpha')).toBeUndefined();

    skill(join(root, 'gamma'));
    expect((await find('gamma'))?.name).toBe('gamma');
    rmSync(join(root, 'beta'), { recursive: true });
    expect(await find('beta')).toBeUndefined();
    renameSync(join(root, 'gamma'), join(root, 'delta'));
    expect(await find('gamma')).toBeUndefined();
    expect((await find('delta'))?.name).toBe('delta');
  });

  it('the skill limit still applies through a remembered listing: skills added past it send the lookup to full discovery', async () => {
    const root = join(base, 'limit');
    for (const n of ['a1', 'a2']) skill(join(root, n));
    const listings = new FolderListings();
    expect((await findSkillByName([root], 'a2', 2, listings))?.name).toBe('a2');
    skill(join(root, 'a0')); // sorts first: a2 is now past the limit of 2
    expect(await findSkillByName([root], 'a2', 2, listings)).toBeUndefined();
    expect((await discoverSkills([root], 2)).skills.map((s) => s.name)).toEqual(['a0', 'a1']);
  });
});
