/**
 * The archive reader pull uses for `.tar.gz` skills (cli/pull/tar.ts): regular files and folders
 * only, from POSIX ustar, pax and GNU tar's plain headers, each refusal named after the attack.
 * Archives made by the system's own tar (GNU and pax formats) are read too, to show interop.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { ArchiveRefused, gunzipCapped, readTar } from '../../cli/pull/tar.js';
import { tar } from './tar-write.js';

const files = (entries: ReturnType<typeof readTar>): Record<string, string> =>
  Object.fromEntries(entries.filter((e) => e.kind === 'file').map((e) => [e.path, e.bytes.toString('utf8')]));

describe('readTar: what it takes', () => {
  test('regular files and folders, a "./" prefix dropped, a pax path longer than 100 bytes', () => {
    const long = `${'d'.repeat(120)}/file.md`;
    const entries = readTar(
      tar([
        { name: './', type: '5' },
        { name: './SKILL.md', body: '# hi\n' },
        { name: 'refs/', type: '5' },
        { name: 'refs/a.md', body: 'a' },
        { name: 'x', pax: { path: long }, body: 'long' },
      ]),
    );
    expect(files(entries)).toEqual({ 'SKILL.md': '# hi\n', 'refs/a.md': 'a', [long]: 'long' });
    expect(entries.filter((e) => e.kind === 'dir').map((e) => e.path)).toEqual(['refs']);
  });

  test.each(['gnu', 'pax', 'ustar'])('an archive made by the system tar in --format=%s', (format) => {
    const dir = mkdtempSync(join(tmpdir(), 'tar-src-'));
    mkdirSync(join(dir, 'scripts'));
    writeFileSync(join(dir, 'SKILL.md'), '---\nname: x\n---\n');
    writeFileSync(join(dir, 'scripts', 'run.sh'), '#!/bin/sh\n');
    const out = join(mkdtempSync(join(tmpdir(), 'tar-out-')), 'a.tar.gz');
    execFileSync('tar', [`--format=${format}`, '-czf', out, '-C', dir, '.']);
    expect(files(readTar(gunzipCapped(readFileSync(out), 1 << 20)))).toEqual({
      'SKILL.md': '---\nname: x\n---\n',
      'scripts/run.sh': '#!/bin/sh\n',
    });
  });
});

describe('readTar: what it refuses', () => {
  test.each([
    ['1', 'a hard link'],
    ['2', 'a symbolic link'],
    ['3', 'a character device'],
    ['4', 'a block device'],
    ['6', 'a FIFO'],
    ['L', 'a GNU long-name record'],
  ])('attack: an entry of type %s (%s) is refused, never materialised', (type, what) => {
    expect(() =>
      readTar(
        tar([
          { name: 'SKILL.md', body: 'x' },
          { name: 'passwd', type, linkname: '/etc/passwd' },
        ]),
      ),
    ).toThrow(new ArchiveRefused(`"passwd" is ${what}; only regular files and folders are taken from an archive`));
  });

  test('attack: a size claiming more bytes than the archive holds', () => {
    expect(() => readTar(tar([{ name: 'SKILL.md', body: 'x', size: 1 << 20 }], Buffer.alloc(0)))).toThrow(
      /claims 1048576 bytes, more than the archive holds/,
    );
  });

  test('attack: one path twice (which copy wins would depend on the reader)', () => {
    expect(() =>
      readTar(
        tar([
          { name: 'SKILL.md', body: 'a' },
          { name: './SKILL.md', body: 'b' },
        ]),
      ),
    ).toThrow(/in the archive twice/);
  });

  test('attack: data hidden after the end-of-archive block', () => {
    const hidden = Buffer.concat([Buffer.alloc(1024), tar([{ name: 'evil.md', body: 'x' }])]);
    expect(() => readTar(tar([{ name: 'SKILL.md', body: 'a' }], hidden))).toThrow(/data after its end-of-archive block/);
  });

  test('a header with a wrong checksum, and one that is not ustar', () => {
    const bad = tar([{ name: 'SKILL.md', body: 'a' }]);
    bad[0] = 0x41;
    expect(() => readTar(bad)).toThrow(/wrong checksum/);
    expect(() => readTar(Buffer.alloc(512, 1))).toThrow(ArchiveRefused);
  });

  test('attack: a decompression bomb stops at the cap', () => {
    const bomb = gzipSync(Buffer.alloc(64 << 20));
    expect(bomb.length).toBeLessThan(1 << 20);
    expect(() => gunzipCapped(bomb, 16 << 20)).toThrow(/unpacks to more than 16777216 bytes/);
  });

  test('a stream that is not gzip', () => {
    expect(() => gunzipCapped(Buffer.from('PK\x03\x04 zip'), 1 << 20)).toThrow(/not a gzip stream/);
  });
});
