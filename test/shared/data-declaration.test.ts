/**
 * `data:` in a declaration (shared/declaration.ts) and the quota a run gets from it (shared/data.ts):
 * the same field in each of the three declaration places, its refusals, and the operator's figures
 * as the most a skill may have.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ANYONE, dataBaseOf, dataQuota, dataWho } from '../../shared/data.js';
import { parseDeclaration } from '../../shared/declaration.js';
import { resolveDeclaration } from '../../shared/declaration-source.js';
import { parseSkillMd } from '../../shared/frontmatter.js';
import { requesterTag } from '../../shared/token.js';

const RUN = [{ script: 'a.py', interpreter: 'python3' }];
const declare = (data: unknown) => parseDeclaration({ version: 1, run: RUN, data } as never);
const OPERATOR = { bytes: 100 * 1024 * 1024, files: 10_000 };

describe('data: in a declaration', () => {
  it('true is the operator’s quota, a mapping names bytes (a size or a number) and files, false or absent is none', () => {
    expect(declare(true).declaration?.data).toEqual({});
    expect(declare({ bytes: '10M', files: 500 }).declaration?.data).toEqual({ bytes: 10 * 1024 * 1024, files: 500 });
    expect(declare({ bytes: 4096 }).declaration?.data).toEqual({ bytes: 4096 });
    expect(declare(false).declaration?.data).toBeUndefined();
    expect(parseDeclaration({ version: 1, run: RUN } as never).declaration?.data).toBeUndefined();
  });

  it.each([
    ['a string', 'yes'],
    ['a list', [1]],
    ['zero bytes', { bytes: 0 }],
    ['a malformed size', { bytes: 'lots' }],
    ['a fractional entry count', { files: 1.5 }],
    ['a negative entry count', { files: -1 }],
  ])('%s is refused (the skill gets no runnable script, never a guessed folder)', (_name, value) => {
    const result = declare(value);
    expect(result.declaration).toBeUndefined();
    expect(result.problems.join(' ')).toMatch(/mcp-host\.data/);
  });

  it('an unknown key below data: is named, the rest applies', () => {
    const result = declare({ files: 3, forever: true });
    expect(result.declaration?.data).toEqual({ files: 3 });
    expect(result.problems.join(' ')).toMatch(/mcp-host\.data\.forever/);
  });

  const base = mkdtempSync(join(tmpdir(), 'data-decl-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  it('is read the same from the frontmatter, the sidecar and an operator declaration', async () => {
    const fields = 'version: 1\nrun:\n  - script: a.py\n    interpreter: python3\ndata:\n  bytes: 1000\n';
    const places: { files: Record<string, string>; md: string; operator?: boolean }[] = [
      { files: {}, md: `---\nname: demo\ndescription: d\nmcp-host:\n${fields.trimEnd().replace(/^/gm, '  ')}\n---\n` },
      { files: { 'mcp-host.yaml': fields }, md: '---\nname: demo\ndescription: d\n---\n' },
      { files: {}, md: '---\nname: demo\ndescription: d\n---\n', operator: true },
    ];
    for (const [i, place] of places.entries()) {
      const dir = join(base, `s${i}`);
      const ops = join(base, `ops${i}`);
      mkdirSync(dir);
      mkdirSync(ops);
      for (const [path, text] of Object.entries(place.files)) writeFileSync(join(dir, path), text);
      if (place.operator) writeFileSync(join(ops, 'demo.yaml'), fields);
      const parsed = parseSkillMd(place.md, 65536);
      const resolved = await resolveDeclaration({
        name: 'demo',
        realDir: dir,
        frontmatter: parsed.frontmatter,
        declarationError: parsed.declarationError,
        declarationsDir: place.operator ? ops : undefined,
        contentDigest: async () => ({ ok: true, digest: 'a'.repeat(64) }),
      });
      expect(resolved.declaration?.data).toEqual({ bytes: 1000 });
    }
  });
});

describe('the quota and the folder a run gets', () => {
  it('standalone only a skill declaring data: gets one; with the host’s base every skill does', () => {
    expect(dataQuota(undefined, false, OPERATOR)).toBeUndefined();
    expect(dataQuota({}, false, OPERATOR)).toEqual(OPERATOR);
    expect(dataQuota(undefined, true, OPERATOR)).toEqual(OPERATOR);
  });

  it('attack: a skill declaring more than the operator allows gets the operator’s figures', () => {
    expect(dataQuota({ bytes: 2 ** 50, files: 10 ** 9 }, false, OPERATOR)).toEqual(OPERATOR);
    expect(dataQuota({ bytes: 10, files: 2 }, true, OPERATOR)).toEqual({ bytes: 10, files: 2 });
  });

  it('one folder per subject, named by a hash (never the subject itself); anyone without an identity', () => {
    expect(dataWho(undefined)).toBe(ANYONE);
    expect(dataWho('alice@example.com')).toBe(`s-${requesterTag('alice@example.com')}`);
    expect(dataWho('alice@example.com')).not.toContain('alice');
    expect(dataWho('alice@example.com')).not.toBe(dataWho('bob@example.com'));
  });

  it('the base is the host’s MCP_DATA_DIR, else data/ in the state folder', () => {
    expect(dataBaseOf({ MCP_DATA_DIR: '/srv/data' }, '/var/lib/skill-mcp')).toBe('/srv/data');
    expect(dataBaseOf({}, '/var/lib/skill-mcp')).toBe('/var/lib/skill-mcp/data');
  });
});
