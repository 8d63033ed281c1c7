/**
 * The front's warm-start digest index (server/catalog/digest-index.ts, SKILL_MCP_DIGEST_INDEX):
 * a remembered digest must never be published for bytes that changed. An edit that keeps the
 * file's size and mtime (touch -d back) is seen, because ctime moved; a change within the tick the
 * digest was taken in (same size and times) is seen at the next start, because a digest is reused
 * only once it was taken ≥ SETTLE_MS after that file state was first seen (racily clean). An index
 * another user could have written — not a 0600 regular file of this uid, or a link — is refused:
 * not read, not overwritten.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { digestServedFile } from '../../server/catalog/digest.js';
import { DigestIndex } from '../../server/catalog/digest-index.js';
import { scanSkill, type ScanMemory } from '../../server/catalog/skill.js';
import { DEFAULT_DIGEST_INDEX, digestIndexPath } from '../../server/start.js';
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';

const base = mkdtempSync(join(tmpdir(), 'digest-index-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;
const scratch = Buffer.alloc(64 * 1024);
const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
let n = 0;

/** A skill folder with one file, and an index path beside it. */
function setup(text: string) {
  const dir = mkdtempSync(join(base, 'skill-'));
  writeFileSync(join(dir, 'a.md'), text);
  return { dir, index: join(base, `index-${n++}.json`) };
}

/** Starts a front at wall-clock `at`: loads the index, digests the file, saves, as the catalog does. */
function start(dir: string, indexPath: string, at: number, warnings: string[] = []) {
  const index = DigestIndex.load(
    indexPath,
    (m) => warnings.push(m),
    () => at,
  );
  const digest = digestServedFile(dir, 'a.md', 1024 * 1024, scratch, index);
  index.save();
  return { index, digest, warnings };
}

describe('a remembered digest is never published for changed bytes', () => {
  it('reused only from the start after the one that saw the file settle; then without reading it', () => {
    const { dir, index } = setup('version one\n');
    expect(start(dir, index, 0).digest.hex).toBe(sha('version one\n'));
    expect(statSync(index).mode & 0o777).toBe(0o600);
    // Second start, 3 s later: the state is the same but was first seen at 0 and hashed at 0 — hashed again, now settled.
    start(dir, index, 3_000);
    // Third start: reused. Proven by the index answering for the file's current state.
    const third = DigestIndex.load(
      index,
      () => undefined,
      () => 6_000,
    );
    const st = statSync(join(dir, 'a.md'), { bigint: true });
    expect(third.lookup(`${dir}\0a.md`, `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`)).toBe(sha('version one\n'));
  });

  it('an edit keeping the size and the mtime (touch -d back) is seen: ctime moved', () => {
    const { dir, index } = setup('version one\n');
    const file = join(dir, 'a.md');
    // A whole-second mtime, so it can be put back exactly (to the nanosecond) after the edit.
    const SECONDS = 1_700_000_000;
    utimesSync(file, SECONDS, SECONDS);
    start(dir, index, 0);
    start(dir, index, 3_000); // settled
    const before = statSync(file, { bigint: true });
    writeFileSync(file, 'version TWO\n'); // same size
    utimesSync(file, SECONDS, SECONDS);
    const after = statSync(file, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
    expect(after.ctimeNs).not.toBe(before.ctimeNs);
    expect(start(dir, index, 6_000).digest.hex).toBe(sha('version TWO\n'));
  });

  it('a change in the same tick as the hash (same size and times) is not hidden: an unsettled digest is taken again', () => {
    const path = join(base, `index-${n++}.json`);
    // As the filesystem would leave it: two writes within one timestamp tick, the digest taken between them.
    const first = DigestIndex.load(
      path,
      () => undefined,
      () => 10_000,
    );
    const at = first.begin('k', 'S');
    first.record('k', 'S', at, sha('between the writes'));
    first.save();
    // Next start within the settling time of that state, or long after: the digest was taken in
    // the tick the state was first seen, so it is not trusted; the file is read again.
    for (const later of [10_500, 100_000])
      expect(
        DigestIndex.load(
          path,
          () => undefined,
          () => later,
        ).lookup('k', 'S'),
      ).toBeUndefined();
    // Hashed again long after first seen: that digest is trusted from then on.
    const second = DigestIndex.load(
      path,
      () => undefined,
      () => 100_000,
    );
    second.record('k', 'S', second.begin('k', 'S'), sha('after the second write'));
    second.save();
    expect(
      DigestIndex.load(
        path,
        () => undefined,
        () => 200_000,
      ).lookup('k', 'S'),
    ).toBe(sha('after the second write'));
    expect(
      DigestIndex.load(
        path,
        () => undefined,
        () => 200_000,
      ).lookup('k', 'S2'),
    ).toBeUndefined();
  });

  it('files not seen in a start are forgotten by its save', () => {
    const path = join(base, `index-${n++}.json`);
    const first = DigestIndex.load(
      path,
      () => undefined,
      () => 0,
    );
    first.record('gone', 'S', { firstSeen: 0, hashedAt: 5_000 }, sha('x'));
    first.save();
    DigestIndex.load(
      path,
      () => undefined,
      () => 10_000,
    ).save();
    expect(
      DigestIndex.load(
        path,
        () => undefined,
        () => 20_000,
      ).lookup('gone', 'S'),
    ).toBeUndefined();
  });
});

describe('an unchanged start does not rewrite the index; any difference does', () => {
  /** The index file's inode: a save writes a new file and renames it over the old one. */
  const inode = (path: string): bigint => statSync(path, { bigint: true }).ino;
  const stateOf = (file: string): string => {
    const st = statSync(file, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  };

  it('every entry found settled and unchanged: the file is left as it is, and the next start still reuses it', () => {
    const { dir, index } = setup('same\n');
    start(dir, index, 0);
    start(dir, index, 3_000); // settled: recorded, so written
    const written = inode(index);
    const was = readFileSync(index);
    start(dir, index, 6_000);
    expect(inode(index)).toBe(written);
    expect(readFileSync(index).equals(was)).toBe(true);
    expect(
      DigestIndex.load(
        index,
        () => undefined,
        () => 9_000,
      ).lookup(`${dir}\0a.md`, stateOf(join(dir, 'a.md'))),
    ).toBe(sha('same\n'));
  });

  it('a changed file (hashed again) is written', () => {
    const { dir, index } = setup('one\n');
    start(dir, index, 0);
    start(dir, index, 3_000);
    const written = inode(index);
    writeFileSync(join(dir, 'a.md'), 'two, longer\n');
    start(dir, index, 6_000);
    expect(inode(index)).not.toBe(written);
    expect(readFileSync(index, 'utf8')).toContain(sha('two, longer\n'));
  });

  it('a forgotten entry (a read found other bytes) is written, even with nothing else changed', () => {
    const { dir, index } = setup('x\n');
    start(dir, index, 0);
    start(dir, index, 3_000);
    const key = `${dir}\0a.md`;
    const loaded = DigestIndex.load(
      index,
      () => undefined,
      () => 6_000,
    );
    expect(loaded.lookup(key, stateOf(join(dir, 'a.md')))).toBe(sha('x\n'));
    loaded.forget(key);
    loaded.save();
    expect(
      DigestIndex.load(
        index,
        () => undefined,
        () => 9_000,
      ).lookup(key, stateOf(join(dir, 'a.md'))),
    ).toBeUndefined();
  });

  it('an entry not looked up this start is dropped by a write', () => {
    const { dir, index } = setup('x\n');
    start(dir, index, 0);
    start(dir, index, 3_000);
    const written = inode(index);
    DigestIndex.load(
      index,
      () => undefined,
      () => 6_000,
    ).save();
    expect(inode(index)).not.toBe(written);
    expect(JSON.parse(readFileSync(index, 'utf8')).rows).toEqual([]);
  });

  it('a file holding rows it could not use (malformed, or a key twice) is rewritten without them', () => {
    const { dir, index } = setup('x\n');
    start(dir, index, 0);
    start(dir, index, 3_000);
    const good = JSON.parse(readFileSync(index, 'utf8'));
    for (const extra of [['k', 'S', 0, 5_000, 'not hex'], good.rows[0]]) {
      writeFileSync(index, JSON.stringify({ ...good, rows: [...good.rows, extra] }), { mode: 0o600 });
      start(dir, index, 6_000);
      expect(JSON.parse(readFileSync(index, 'utf8')).rows).toEqual(good.rows);
    }
  });

  it("parses remembered by another build are replaced by this build's", async () => {
    const path = join(base, `index-${n++}.json`);
    writeFileSync(path, JSON.stringify({ version: 2, build: 'another build', rows: [], parsed: [['k', '{"frontmatter":{}}']] }), {
      mode: 0o600,
    });
    DigestIndex.load(path, () => undefined).save();
    const after = JSON.parse(readFileSync(path, 'utf8'));
    expect(after.build).not.toBe('another build');
    expect(after.parsed).toEqual([]);
  });

  it('a parse remembered afresh (the remembered one was not usable) is written', () => {
    const path = join(base, `index-${n++}.json`);
    const first = DigestIndex.load(
      path,
      () => undefined,
      () => 0,
    );
    first.rememberParsedSkillMd('k', '{"old":1}');
    first.save();
    const second = DigestIndex.load(
      path,
      () => undefined,
      () => 1,
    );
    expect(second.parsedSkillMd('k')).toBe('{"old":1}');
    second.rememberParsedSkillMd('k', '{"new":1}');
    second.save();
    expect(
      DigestIndex.load(
        path,
        () => undefined,
        () => 2,
      ).parsedSkillMd('k'),
    ).toBe('{"new":1}');
  });
});

describe('an index file someone else could have written is refused', () => {
  it('mode 0644: not read, not overwritten, said so', () => {
    const { dir, index } = setup('x\n');
    start(dir, index, 0);
    chmodSync(index, 0o644);
    const was = readFileSync(index);
    const { warnings } = start(dir, index, 3_000);
    expect(warnings.join('\n')).toMatch(/mode 644; it must be 0600/);
    expect(readFileSync(index).equals(was)).toBe(true);
  });

  it('a symbolic link: not followed, not replaced', () => {
    const target = join(base, `target-${n++}.json`);
    writeFileSync(target, 'not an index', { mode: 0o600 });
    const link = join(base, `link-${n++}.json`);
    symlinkSync(target, link);
    const { dir } = setup('x\n');
    const { warnings } = start(dir, link, 0);
    expect(warnings.join('\n')).toMatch(/cannot be opened \(ELOOP\)/);
    expect(readFileSync(target, 'utf8')).toBe('not an index');
  });

  it.skipIf(!isRoot)('owned by another uid (root only): not read, not overwritten', () => {
    const { dir, index } = setup('x\n');
    start(dir, index, 0);
    chownSync(index, 65534, 65534);
    const was = readFileSync(index);
    const { warnings } = start(dir, index, 3_000);
    expect(warnings.join('\n')).toMatch(/owned by uid 65534/);
    expect(readFileSync(index).equals(was)).toBe(true);
  });

  it('a corrupt index is ignored and rewritten', () => {
    const { dir, index } = setup('x\n');
    writeFileSync(index, '{not json', { mode: 0o600 });
    const { digest, warnings } = start(dir, index, 0);
    expect(digest.hex).toBe(sha('x\n'));
    expect(warnings.join('\n')).toMatch(/cannot be read as an index/);
    expect(JSON.parse(readFileSync(index, 'utf8'))).toMatchObject({ version: 2 });
  });
});

describe('a remembered SKILL.md parse is used only for the same text, by the same build', () => {
  const skillMd = '---\nname: memo\ndescription: "remembered"\n---\n\n# Heading one\n\nbody\n';

  /** A skill folder and a scan of it with `memory`, as the catalog scans. */
  async function scanWith(memory: ScanMemory, text = skillMd) {
    const dir = mkdtempSync(join(base, 'memo-'));
    writeFileSync(join(dir, 'SKILL.md'), text);
    const found = { name: 'memo', realDir: dir, displayPath: 'skills/memo', root: 0 };
    return (await scanSkill(found, DEFAULT_CATALOG_LIMITS, undefined, memory)).record!;
  }

  it('a start of the same build reuses the parse; a different text is parsed afresh', async () => {
    const path = join(base, `index-${n++}.json`);
    const first = DigestIndex.load(
      path,
      () => undefined,
      () => 0,
    );
    const record = await scanWith(first);
    expect(record.frontmatter).toEqual({ name: 'memo', description: 'remembered' });
    expect(record.headings).toEqual(['Heading one']);
    first.save();
    const second = DigestIndex.load(
      path,
      () => undefined,
      () => 1,
    );
    const key = `${DEFAULT_CATALOG_LIMITS.maxFrontmatterBytes}:${sha(skillMd)}`;
    expect(JSON.parse(second.parsedSkillMd(key)!)).toMatchObject({ frontmatter: { name: 'memo' }, headings: ['Heading one'] });
    const other = await scanWith(second, skillMd.replace('remembered', 'edited'));
    expect(other.frontmatter['description']).toBe('edited');
  });

  it('a parse remembered by another build (another program file or Node) is not reused', () => {
    const path = join(base, `index-${n++}.json`);
    writeFileSync(path, JSON.stringify({ version: 2, build: 'another build', rows: [], parsed: [['k', '{"frontmatter":{}}']] }), {
      mode: 0o600,
    });
    expect(DigestIndex.load(path, () => undefined).parsedSkillMd('k')).toBeUndefined();
  });

  it('a remembered value that is not a parse (an index written by something else) is ignored: the text is parsed', async () => {
    const garbage: ScanMemory = {
      parsedSkillMd: () => '{"frontmatter":"not a mapping","bom":false,"headings":[]}',
      rememberParsedSkillMd: () => undefined,
    };
    const record = await scanWith(garbage);
    expect(record.frontmatter).toEqual({ name: 'memo', description: 'remembered' });
  });
});

describe('a warm start takes SKILL.md from the index only on the evidence its digest is published on', () => {
  const skillMd = '---\nname: memo\ndescription: "on disk"\n---\n\n# Heading\n';
  const limits = DEFAULT_CATALOG_LIMITS;
  const keyOf = (digest: string): string => `${limits.maxFrontmatterBytes}:${digest}`;
  /** A parse as the index would hold it, but saying something the file does not: shows whether the file was read. */
  const fromMemory = JSON.stringify({
    frontmatter: { name: 'memo', description: 'from memory' },
    bom: false,
    validUtf8: true,
    headings: ['Remembered'],
  });

  function folder(text = skillMd) {
    const dir = mkdtempSync(join(base, 'warm-md-'));
    writeFileSync(join(dir, 'SKILL.md'), text);
    return { dir, found: { name: 'memo', realDir: dir, displayPath: 'skills/memo', root: 0 } };
  }

  /** A memory holding `digest` for SKILL.md in exactly the state the walk sees, and `parses`; records what is remembered. */
  function memoryFor(dir: string, digest: string | undefined, parses: Record<string, string>, walked = true) {
    const remembered: string[] = [];
    const asked: string[] = [];
    const memory: ScanMemory = {
      parsedSkillMd: (key) => parses[key],
      rememberParsedSkillMd: (key) => void remembered.push(key),
      ...(walked
        ? {
            walkedDigest: (realDir: string, rel: string, state: string) => {
              asked.push(rel);
              return realDir === dir && rel === 'SKILL.md' && state === stateOfFile(join(dir, 'SKILL.md')) ? digest : undefined;
            },
          }
        : {}),
    };
    return { memory, remembered, asked };
  }
  const stateOfFile = (file: string): string => {
    const st = statSync(file, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  };

  it('settled digest and its parse remembered: SKILL.md is not read, and the record carries that digest', async () => {
    const { dir, found } = folder();
    const digest = sha(skillMd);
    const { memory } = memoryFor(dir, digest, { [keyOf(digest)]: fromMemory });
    const { record } = await scanSkill(found, limits, undefined, memory);
    expect(record?.description).toBe('from memory');
    expect(record?.skillMdDigest).toBe(digest);
    expect(record?.published).toBe(true);
  });

  it("no settled digest for the walked state (changed, or not yet settled): read, and keyed by the bytes' own digest", async () => {
    const { dir, found } = folder();
    const { memory, remembered } = memoryFor(dir, undefined, {
      [keyOf(sha(skillMd))]: fromMemory.replace('from memory', 'parse of these bytes'),
    });
    const { record } = await scanSkill(found, limits, undefined, memory);
    // The parse cache is still used, by the hash of what was read.
    expect(record?.description).toBe('parse of these bytes');
    expect(record?.skillMdDigest).toBe(sha(skillMd));
    expect(remembered).toEqual([]);
  });

  it("a settled digest whose parse is not remembered: read and parsed, remembered under the digest of the bytes read, never under the index's", async () => {
    const { dir, found } = folder();
    const stale = sha('what the index believes the file holds');
    const { memory, remembered } = memoryFor(dir, stale, {});
    const { record } = await scanSkill(found, limits, undefined, memory);
    expect(record?.description).toBe('on disk');
    expect(record?.skillMdDigest).toBe(sha(skillMd));
    expect(remembered).toEqual([keyOf(sha(skillMd))]);
  });

  it('walked states not trusted (a root process: no walkedDigest): always read', async () => {
    const { dir, found } = folder();
    const { memory } = memoryFor(dir, sha(skillMd), { [keyOf(sha('other'))]: fromMemory }, false);
    const { record } = await scanSkill(found, limits, undefined, memory);
    expect(record?.description).toBe('on disk');
  });

  it('a SKILL.md that is a link (to a file inside the skill) is never taken from memory: the read refuses it as before', async () => {
    const { dir, found } = folder('---\nname: memo\ndescription: real\n---\n');
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'real.md'), skillMd);
    rmSync(join(dir, 'SKILL.md'));
    symlinkSync('docs/real.md', join(dir, 'SKILL.md'));
    const digest = sha(skillMd);
    // Even a memory answering for whatever state the walk reports.
    const memory: ScanMemory = { parsedSkillMd: () => fromMemory, rememberParsedSkillMd: () => undefined, walkedDigest: () => digest };
    const { record, problems } = await scanSkill(found, limits, undefined, memory);
    expect(record).toBeUndefined();
    expect(problems.map((p) => p.reason)).toEqual(['unreadable-skill-md']);
  });

  it('through a real index: the start after the one that settled SKILL.md does not read it; an edit keeping size and mtime is read', async () => {
    const { dir, found } = folder();
    const file = join(dir, 'SKILL.md');
    const SECONDS = 1_700_000_000;
    utimesSync(file, SECONDS, SECONDS);
    const path = join(base, `index-${n++}.json`);
    const startAt = async (at: number) => {
      const index = DigestIndex.load(
        path,
        () => undefined,
        () => at,
      );
      const memory: ScanMemory = {
        parsedSkillMd: (k) => index.parsedSkillMd(k),
        rememberParsedSkillMd: (k, j) => index.rememberParsedSkillMd(k, j),
        walkedDigest: (d, rel, state) => index.lookup(`${d}\0${rel}`, state),
      };
      const { record } = await scanSkill(found, limits, undefined, memory);
      digestServedFile(dir, 'SKILL.md', 1024 * 1024, scratch, index, {
        state: record!.fileStates!.get('SKILL.md')!,
        size: record!.files[0]!.size,
      });
      index.save();
      return record!;
    };
    await startAt(0);
    await startAt(3_000); // settles
    // Make the remembered parse say something else: if the next start reads the file, it will not show.
    const saved = JSON.parse(readFileSync(path, 'utf8'));
    saved.parsed = saved.parsed.map(([k, v]: [string, string]) => [k, v.replace('on disk', 'from memory')]);
    writeFileSync(path, JSON.stringify(saved), { mode: 0o600 });
    expect((await startAt(6_000)).description).toBe('from memory');
    const before = statSync(file, { bigint: true });
    writeFileSync(file, skillMd.replace('on disk', 'edited!'));
    utimesSync(file, SECONDS, SECONDS);
    expect(statSync(file, { bigint: true }).mtimeNs).toBe(before.mtimeNs);
    const edited = await startAt(9_000);
    expect(edited.description).toBe('edited!');
    expect(edited.skillMdDigest).toBe(sha(skillMd.replace('on disk', 'edited!')));
  });
});

describe('where the index lives by default (server/start.ts digestIndexPath)', () => {
  it("in a standalone front's own state folder; off when asked, hosted, or when the folder is not closed to others", () => {
    const state = mkdtempSync(join(base, 'state-'));
    chmodSync(state, 0o700);
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state })).toBe(join(state, DEFAULT_DIGEST_INDEX));
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state, SKILL_MCP_DIGEST_INDEX: 'off' })).toBeUndefined();
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state, SKILL_MCP_DIGEST_INDEX: 'rel/x.json' })).toBe(join(process.cwd(), 'rel/x.json'));
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state, MCP_DATA_DIR: '/data' })).toBeUndefined();
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: join(state, 'not-made-yet') })).toBeUndefined();
    // Security: a folder others may write to could have the index swapped under the front.
    chmodSync(state, 0o770);
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state })).toBeUndefined();
  });

  it.skipIf(!isRoot)('not in a state folder another uid owns (a root-started front has dropped to its own uid by then)', () => {
    const state = mkdtempSync(join(base, 'state-'));
    chmodSync(state, 0o700);
    chownSync(state, 65534, 65534);
    expect(digestIndexPath({ SKILL_MCP_STATE_DIR: state })).toBeUndefined();
  });
});
