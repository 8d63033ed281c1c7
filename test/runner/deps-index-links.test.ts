/**
 * What a local index's pages link to (cli/deps/index-links.ts) and which inputs of an
 * environment's address differ (runner/deps/spec.ts), in-process: the folders the install sandbox
 * must see, its refusals (too many pages, too many folders, a page too large), and the words a
 * DEPS_MISSING message uses (never a URL or a path).
 */
import { describe, expect, it } from 'vitest';
import { folderToBind, hrefsOf, linkedFolders, MAX_LINKED_FOLDERS, MAX_PAGES } from '../../cli/deps/index-links.js';
import type { IndexReader } from '../../cli/deps/index-links.js';
import { addressDifferences } from '../../runner/deps/spec.js';
import type { EnvAddress } from '../../runner/deps/spec.js';

/** An index of project folders, each with its page. */
function reader(pages: Record<string, string | { tooLarge: number }>): IndexReader {
  return {
    list: () => Object.keys(pages),
    page: (path) => {
      const name = path.split('/').at(-2)!;
      return pages[name];
    },
  };
}

describe("a local index's links", () => {
  it('hrefs, quoted or not, with &amp; undone', () => {
    expect(hrefsOf(`<a href="../../files/a.whl#sha256=1">a</a><A HREF='b.whl'>b</A><a href=c.whl?x=1&amp;y=2>c</a>`)).toEqual([
      '../../files/a.whl#sha256=1',
      'b.whl',
      'c.whl?x=1&y=2',
    ]);
  });

  it('the folder bound for a linked file: the first one below what it shares with the index; none inside the index', () => {
    expect(folderToBind('/srv/pypi/simple', '/srv/pypi/files/a.whl')).toBe('/srv/pypi/files');
    expect(folderToBind('/srv/pypi/simple', '/srv/pypi/files/ab/cd/a.whl')).toBe('/srv/pypi/files');
    expect(folderToBind('/srv/pypi/simple', '/srv/pypi/simple/pkg/a.whl')).toBeUndefined();
    expect(folderToBind('/srv/pypi/simple', '/srv/pypi/a.whl')).toBe('/srv/pypi');
    // Sharing only / with the index: the file's own folder, never /other entire.
    expect(folderToBind('/srv/pypi/simple', '/other/place/a.whl')).toBe('/other/place');
  });

  it('the usual local mirror (pages in simple/, wheels in files/): one folder, files/', () => {
    const found = linkedFolders(
      '/opt/pypi/simple',
      'SKILL_MCP_PIP_INDEX_URL',
      reader({
        pypdf: '<a href="../../files/pypdf-6.19.0-py3-none-any.whl#sha256=ab">pypdf</a>',
        attrs: '<a href="../../files/attrs-1-py3-none-any.whl">attrs</a><a href="https://example.org/x.whl">remote</a>',
        local: '<a href="local-1.whl">inside the index</a>',
      }),
    );
    expect(found).toEqual({ ok: true, folders: ['/opt/pypi/files'], pages: 3 });
  });

  it('refused, saying what to do: more pages than it reads, links into too many folders, a page too large', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_PAGES + 1 }, (_, i) => [`p${i}`, '<a href="x.whl">x</a>']));
    const tooMany = linkedFolders('/m/simple', 'SKILL_MCP_PIP_INDEX_URL', reader(many));
    expect(tooMany).toMatchObject({ ok: false });
    expect(!tooMany.ok && tooMany.why).toContain(`more than ${MAX_PAGES} project pages`);
    expect(!tooMany.ok && tooMany.why).toContain('serve it over http on this machine');
    const spread = Object.fromEntries(
      Array.from({ length: MAX_LINKED_FOLDERS + 1 }, (_, i) => [`p${i}`, `<a href="file:///elsewhere/d${i}/x.whl">x</a>`]),
    );
    const scattered = linkedFolders('/m/simple', 'SKILL_MCP_PIP_INDEX_URL', reader(spread));
    expect(!scattered.ok && scattered.why).toContain(`link to files in more than ${MAX_LINKED_FOLDERS} folders outside it`);
    const big = linkedFolders('/m/simple', 'SKILL_MCP_PIP_INDEX_URL', reader({ huge: { tooLarge: 99_000_000 } }));
    expect(!big.ok && big.why).toContain('/m/simple/huge/index.html (SKILL_MCP_PIP_INDEX_URL) is 99000000 bytes');
  });
});

describe("an environment's address, input by input", () => {
  const python = (over: Partial<EnvAddress> = {}): EnvAddress => ({
    v: 1,
    kind: 'python',
    skill: 'pdf',
    builtAt: '2026-12-01T00:00:00.000Z',
    interpreter: 'python:["cpython","3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]","cpython-311-x86_64-linux-gnu","x86_64","linux"]',
    requirements: 'a'.repeat(64),
    sourceBuilds: false,
    index: 'b'.repeat(64),
    indexFrom: 'explicit',
    ...over,
  });

  it('nothing differs: nothing said', () => {
    expect(addressDifferences(python(), python())).toEqual([]);
  });

  it('each input named: the interpreter by version, the requirements, source-builds, the index settings by where they came from', () => {
    const newer = 'python:["cpython","3.12.1 (main)","cpython-312-x86_64-linux-gnu","x86_64","linux"]';
    expect(addressDifferences(python(), python({ interpreter: newer }))).toEqual([
      'the interpreter (cpython 3.11.2 then, cpython 3.12.1 now)',
    ]);
    expect(addressDifferences(python(), python({ requirements: 'c'.repeat(64) }))).toEqual(['the requirement lines']);
    expect(addressDifferences(python(), python({ sourceBuilds: true }))).toEqual(['source-builds (false then, true now)']);
    const [unset] = addressDifferences(python(), python({ index: 'd'.repeat(64), indexFrom: 'own-configuration' }));
    expect(unset).toContain(
      'it was installed with SKILL_MCP_PIP_INDEX_URL / SKILL_MCP_PIP_FIND_LINKS set, and the runner has none of them',
    );
    const [own] = addressDifferences(python({ indexFrom: 'own-configuration' }), python({ index: 'd'.repeat(64) }));
    expect(own).toContain("it was installed from the installing user's own pip configuration, and the runner has");
    const [values] = addressDifferences(python(), python({ index: 'd'.repeat(64) }));
    expect(values).toContain('had other values when it was installed');
    const node = addressDifferences(
      python({ kind: 'node', interpreter: 'node:["v20.19.0","115","linux","x64"]' }),
      python({ kind: 'node', interpreter: 'node:["v22.1.0","127","linux","x64"]', requirements: 'e'.repeat(64) }),
    );
    expect(node).toEqual(['the interpreter (node v20.19.0 then, node v22.1.0 now)', 'package.json or package-lock.json']);
  });
});
