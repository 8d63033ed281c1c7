/**
 * The one function that decides which declaration applies to a skill and where it came from
 * (shared/declaration-source.ts), on real folders: the rules both processes apply, including the
 * refusals that must never fall back to a skill's own declaration.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { declarationsDigest } from '../../shared/declaration-files.js';
import { resolveDeclaration, type ContentDigest } from '../../shared/declaration-source.js';
import { parseSkillMd } from '../../shared/frontmatter.js';

const base = mkdtempSync(join(tmpdir(), 'decl-source-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const DECLARE = 'version: 1\nrun:\n  - script: run.js\n    interpreter: node\n';
const DIGEST = 'a'.repeat(64);

let n = 0;
function skill(files: Record<string, string>): string {
  const dir = join(base, `s${n++}`);
  mkdirSync(dir);
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return dir;
}

function resolve(dir: string, md: string, declarationsDir?: string, digest: ContentDigest = { ok: true, digest: DIGEST }) {
  const parsed = parseSkillMd(md, 65536);
  return resolveDeclaration({
    name: 'demo',
    realDir: dir,
    frontmatter: parsed.frontmatter,
    declarationError: parsed.declarationError,
    declarationsDir,
    contentDigest: async () => digest,
  });
}

const CLEAN = '---\nname: demo\ndescription: d\n---\nbody\n';
const BLOCK = `---\nname: demo\ndescription: d\nmcp-host:\n${DECLARE.trimEnd().replace(/^/gm, '  ')}\n---\nbody\n`;

describe('resolveDeclaration', () => {
  it('reads the frontmatter block, or the sidecar, and says which', async () => {
    expect(await resolve(skill({}), BLOCK)).toMatchObject({
      origin: { from: 'frontmatter' },
      declaration: { run: [{ script: 'run.js' }] },
      problems: [],
    });
    expect(await resolve(skill({ 'mcp-host.yaml': DECLARE }), CLEAN)).toMatchObject({
      origin: { from: 'sidecar' },
      declaration: { run: [{ script: 'run.js' }] },
      problems: [],
    });
    expect(await resolve(skill({}), CLEAN)).toEqual({ problems: [] });
  });

  it('parses a sidecar as strictly as the frontmatter: unknown major version, aliases, tags, unknown keys', async () => {
    const cases: [string, string][] = [
      ['version: 2\nrun: []\n', 'version 2 is not supported'],
      ['version: 1\nrun: &r []\nenv: *r\n', 'anchors (&name) are not allowed (line 2'],
      ['version: !!int 1\n', 'explicit tags'],
      ['- 1\n', 'the file must be a mapping'],
    ];
    for (const [text, why] of cases) {
      const result = await resolve(skill({ 'mcp-host.yaml': text }), CLEAN);
      expect(result.declaration, text).toBeUndefined();
      expect(result.problems[0]!.detail, text).toContain(why);
    }
    const unknown = await resolve(skill({ 'mcp-host.yaml': `${DECLARE}requirments: x\n` }), CLEAN);
    expect(unknown.declaration).toBeDefined();
    expect(unknown.problems).toEqual([{ at: 'mcp-host.yaml', detail: 'unknown keys ignored: requirments' }]);
  });

  it('both places: no declaration at all, whichever one would parse', async () => {
    const result = await resolve(skill({ 'mcp-host.yaml': DECLARE }), BLOCK);
    expect(result.declaration).toBeUndefined();
    expect(result.problems[0]).toMatchObject({ at: 'SKILL.md', detail: expect.stringContaining('declares in both') });
  });

  it("an operator file replaces the skill's own, and says what it replaced", async () => {
    const ops = skill({ 'demo.yaml': DECLARE.replace('run.js', 'other.js') });
    const result = await resolve(skill({ 'mcp-host.yaml': DECLARE }), BLOCK, ops);
    expect(result).toMatchObject({
      origin: { from: 'operator', replaces: ['frontmatter', 'sidecar'] },
      declaration: { run: [{ script: 'other.js' }] },
      problems: [],
    });
  });

  it("a pin: applied on a match; on a mismatch, an unreadable digest or a malformed pin, nothing applies (never the skill's own)", async () => {
    const own = skill({ 'mcp-host.yaml': DECLARE });
    const pinned = (pin: string) => skill({ 'demo.yaml': `${DECLARE}pin: ${pin}\n` });
    expect(await resolve(own, CLEAN, pinned(`sha256:${DIGEST}`))).toMatchObject({
      origin: { from: 'operator', pinned: true },
      declaration: {},
    });
    const drift = await resolve(own, CLEAN, pinned(`sha256:${'b'.repeat(64)}`));
    expect(drift.declaration).toBeUndefined();
    expect(drift.problems[0]!.detail).toContain(`pinned to sha256:${'b'.repeat(64)}, but the skill's content is now sha256:${DIGEST}`);
    const unreadable = await resolve(own, CLEAN, pinned(`sha256:${DIGEST}`), { ok: false, why: 'too large' });
    expect(unreadable.declaration).toBeUndefined();
    expect(unreadable.problems[0]!.detail).toContain('cannot be computed (too large)');
    for (const bad of ['sha256:ABC', `md5:${DIGEST}`, '42'])
      expect((await resolve(own, CLEAN, pinned(bad))).declaration, bad).toBeUndefined();
  });

  it('a declarations folder that cannot be read runs nothing of any skill (it might hold the replacement)', async () => {
    const result = await resolve(skill({ 'mcp-host.yaml': DECLARE }), CLEAN, join(base, 'missing'));
    expect(result.declaration).toBeUndefined();
    expect(result.problems[0]).toMatchObject({ at: 'operator', detail: expect.stringContaining('cannot be read (ENOENT)') });
  });
});

describe('declarationsDigest', () => {
  it("follows the folder's names and bytes, not its place; unset has its own digest", () => {
    const a = skill({ 'demo.yaml': DECLARE });
    const b = skill({ 'demo.yaml': DECLARE });
    expect(declarationsDigest(a)).toBe(declarationsDigest(b));
    writeFileSync(join(b, 'demo.yaml'), `${DECLARE}# edited\n`);
    expect(declarationsDigest(a)).not.toBe(declarationsDigest(b));
    writeFileSync(join(b, 'demo.yaml'), DECLARE);
    writeFileSync(join(b, 'other.yaml'), DECLARE);
    expect(declarationsDigest(a)).not.toBe(declarationsDigest(b));
    expect(declarationsDigest(undefined)).not.toBe(declarationsDigest(skill({})));
  });
});
