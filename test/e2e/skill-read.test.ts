/**
 * `resources/read` of `skill://` is served by our own handler (server/skill-read.ts: Node's base64
 * instead of the SDK extension's portable loop). It must answer exactly what the extension did:
 * every byte of a binary file back through base64 (padding, every byte value, a file just under a
 * MiB and one over it), text that is UTF-8 as text, the digest the listing published, the URI as
 * asked, and -32602 for anything not served — in both eras.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, rpc, rpcErrorCode, serve, tempDir, type Served } from './harness.js';

afterAll(expectNoLeftovers);

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Every byte value, then random bytes: `size` bytes that are not UTF-8. */
function binary(size: number): Buffer {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
  return Buffer.concat([all, randomBytes(size - all.length)]);
}

/** Files that are not UTF-8: served as base64. */
const BINARY: Record<string, Buffer> = {
  'assets/one-mib.bin': binary(1024 * 1024),
  'assets/over-a-mib.bin': binary(1024 * 1024 + 1), // base64 padding "=="
  'assets/pad-one.bin': binary(257), // padding "="
  'assets/no-pad.bin': binary(258),
  'assets/latin1.txt': Buffer.from('caf\xe9 cr\xe8me\n', 'latin1'), // a blob, never mangled text
};
/** Files that are UTF-8 (NUL included: it round-trips): served as text. */
const TEXT: Record<string, Buffer> = {
  'assets/nul.dat': Buffer.from([0, 0, 0, 1]),
  'notes/unicode.md': Buffer.from('# Ünïcödé ✓ 🚀\r\nline two\n', 'utf8'),
  'notes/empty.txt': Buffer.alloc(0),
  'SKILL.md': Buffer.from('---\nname: bytes\ndescription: Binary and text files to read back.\n---\nRead the assets.\n'),
};

describe.each(ERAS)('resources/read of skill:// through our handler, $name', (era) => {
  let base: string;
  let served: Served;

  beforeAll(async () => {
    base = tempDir('read');
    const skill = join(base, 'root', 'bytes');
    mkdirSync(join(skill, 'assets'), { recursive: true });
    mkdirSync(join(skill, 'notes'), { recursive: true });
    for (const [path, bytes] of Object.entries({ ...BINARY, ...TEXT })) writeFileSync(join(skill, path), bytes);
    writeFileSync(join(skill, '.env'), 'SECRET=1\n');
    served = await serve({ SKILLS_DIR: join(base, 'root') }, era);
  });
  afterAll(async () => {
    await served?.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('every binary file comes back byte for byte as base64, under its published digest and URI', async () => {
    const page = await rpc(served.client, 'skills/list');
    const entry = (page['skills'] as { uri: string; resources: { uri: string; digest: string; size: number }[] }[]).find(
      (s) => s.uri === 'skill://bytes/SKILL.md',
    )!;
    for (const [path, bytes] of Object.entries(BINARY)) {
      const uri = `skill://bytes/${path}`;
      const result = await served.client.readResource({ uri });
      expect(result.contents).toHaveLength(1);
      const content = result.contents[0] as { uri: string; blob?: string; text?: string; mimeType?: string };
      expect(content.uri, path).toBe(uri);
      expect(content.text, path).toBeUndefined();
      expect(Buffer.from(content.blob!, 'base64').equals(bytes), path).toBe(true);
      // Canonical base64 (what Buffer, btoa and every verifier agree on), not just decodable.
      expect(content.blob, path).toBe(bytes.toString('base64'));
      expect(
        entry.resources.find((r) => r.uri === uri),
        path,
      ).toEqual({ uri, digest: sha256(bytes), size: bytes.length });
    }
  });

  test('media types are the ones the extension gave: by file extension, else by content', async () => {
    const types: Record<string, string> = {};
    for (const path of ['assets/one-mib.bin', 'assets/nul.dat', 'assets/latin1.txt', 'notes/unicode.md']) {
      const content = (await served.client.readResource({ uri: `skill://bytes/${path}` })).contents[0] as { mimeType?: string };
      types[path] = content.mimeType!;
    }
    expect(types).toEqual({
      'assets/one-mib.bin': 'application/octet-stream',
      'assets/nul.dat': 'text/plain',
      'assets/latin1.txt': 'text/plain',
      'notes/unicode.md': 'text/markdown',
    });
  });

  test('UTF-8 files (CRLF, emoji, NUL, empty) come back as exact text', async () => {
    for (const [path, bytes] of Object.entries(TEXT)) {
      const content = (await served.client.readResource({ uri: `skill://bytes/${path}` })).contents[0] as { text?: string; blob?: string };
      expect(content.blob, path).toBeUndefined();
      expect(content.text, path).toBe(bytes.toString('utf8'));
    }
  });

  test('dot segments are resolved as URLs resolve them, never above the skill, and the answer names the resolved URI', async () => {
    const result = await served.client.readResource({ uri: 'skill://bytes/assets/%2e%2e/SKILL.md' });
    expect(result.contents[0]).toMatchObject({ uri: 'skill://bytes/SKILL.md', text: TEXT['SKILL.md']!.toString('utf8') });
  });

  test('a URI that is not served is -32602: unknown skill or file, hidden file, folder, other scheme, malformed', async () => {
    for (const uri of [
      'skill://nope/SKILL.md',
      'skill://bytes/assets/missing.bin',
      'skill://bytes/.env',
      'skill://bytes/assets',
      'skill://bytes/',
      'skill://bytes',
      'skill://bytes/../../etc/passwd',
      'skill://bytes/../nope/SKILL.md',
      'file:///etc/passwd',
      'not a uri',
    ]) {
      expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri })), uri).toBe(-32602);
    }
  });
});
