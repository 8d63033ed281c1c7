/**
 * The links between the README, CONTRIBUTING.md, SECURITY.md and docs/ lead somewhere: every
 * relative link names a file that exists, and every `#anchor` a heading of that file (GitHub's
 * slugs: lower case, punctuation dropped, spaces to hyphens). Moving a section breaks no link
 * silently.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  'SECURITY.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(slug(m[1]!));
  }
  return out;
}

/** Relative markdown links outside code: `[text](target)`. */
function linksOf(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (!/^[a-z]+:/i.test(target)) out.push(target);
    }
  }
  return out;
}

describe('links between the docs', () => {
  it.each(DOCS)('%s: every relative link and anchor leads somewhere', (doc) => {
    const text = readFileSync(join(REPO, doc), 'utf8');
    const broken: string[] = [];
    for (const target of linksOf(text)) {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? join(REPO, doc) : join(REPO, dirname(doc), path);
      if (!existsSync(file)) {
        broken.push(`${target}: no such file (${relative(REPO, file)})`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
        broken.push(`${target}: no heading #${anchor} in ${relative(REPO, file)}`);
    }
    expect(broken).toEqual([]);
  });
});
