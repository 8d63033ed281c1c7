/**
 * File names as bytes (shared/byte-names.ts): a name that is not valid UTF-8 gets an escaped
 * spelling that keeps its readable part, is never the spelling of another name, and never holds
 * U+FFFD for a byte; a folder's names come back as the bytes they are.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { joinBytes, nameText, openDirBytes, validName } from '../../shared/byte-names.js';

const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

describe('a name as text', () => {
  it('a valid UTF-8 name is itself (a backslash or U+FFFD in it included)', () => {
    for (const name of ['plain.txt', 'drop\ufffd.txt', 'drop\\xfe.txt', 'é—😀', 'a\nb']) {
      expect(validName(Buffer.from(name))).toBe(true);
      expect(nameText(Buffer.from(name))).toBe(name);
    }
  });

  it('each byte outside a valid sequence is \\xHH, a backslash \\\\, the readable rest as it is', () => {
    expect(nameText(bytes('drop', [0xfe], '.txt'))).toBe('drop\\xfe.txt');
    expect(nameText(bytes('bad', [0xff]))).toBe('bad\\xff');
    expect(nameText(bytes('a\\b', [0x80]))).toBe('a\\\\b\\x80');
    expect(nameText(bytes('é', [0xc3], 'é'))).toBe('é\\xc3é');
    // Overlong forms, surrogates and past U+10FFFF are not valid sequences: each byte escaped.
    expect(nameText(bytes([0xc0, 0xaf]))).toBe('\\xc0\\xaf');
    expect(nameText(bytes([0xed, 0xa0, 0x80], 'x'))).toBe('\\xed\\xa0\\x80x');
    expect(nameText(bytes([0xf4, 0x90, 0x80, 0x80]))).toBe('\\xf4\\x90\\x80\\x80');
    expect(nameText(bytes('😀', [0xf0, 0x9f]))).toBe('😀\\xf0\\x9f');
    expect(nameText(bytes('drop', [0xfe], '.txt'))).not.toContain('\ufffd');
  });

  it('attack: two different names that are not valid UTF-8 never share a spelling (random names)', () => {
    const seen = new Map<string, string>();
    for (let i = 0; i < 20_000; i++) {
      const name = Buffer.from(
        Array.from({ length: 1 + (i % 5) }, () => [0x5c, 0x78, 0x66, 0xfe, 0xc3, 0xa9, 0x41][Math.floor(Math.random() * 7)]!),
      );
      if (validName(name)) continue;
      const text = nameText(name);
      const hex = name.toString('hex');
      expect(seen.get(text) ?? hex, text).toBe(hex);
      seen.set(text, hex);
    }
    expect(seen.size).toBeGreaterThan(100);
  });
});

describe('a folder read as bytes', () => {
  it("gives each entry's name as its bytes: b'bad\\xff' and a real 'bad\\ufffd' are two names, each opening its own file", () => {
    const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-byte-names-'));
    try {
      const odd = bytes('bad', [0xff]);
      writeFileSync(joinBytes(Buffer.from(dir), odd), 'odd');
      writeFileSync(join(dir, 'bad\ufffd'), 'real');
      const handle = openDirBytes(Buffer.from(dir));
      const names: Buffer[] = [];
      for (let name = handle.next(); name !== null; name = handle.next()) names.push(name);
      handle.close();
      expect(names.map((n) => n.toString('hex')).sort()).toEqual([odd.toString('hex'), bytes('bad\ufffd').toString('hex')].sort());
      expect(names.map(nameText).sort()).toEqual(['bad\\xff', 'bad\ufffd']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
