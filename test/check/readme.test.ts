/**
 * The docs and the code agree (docs/architecture.md §9): docs/check.md names every authoring rule
 * the built bin lists in `skill-mcp check --help`, and no rule the bin does not have.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO, runCheck, workspace } from './harness.js';

it('docs/check.md names exactly the authoring rules `check --help` lists', () => {
  const help = runCheck(workspace(), ['--help']).stdout;
  const listed = [...help.matchAll(/^ {2}([a-z]+\/[a-z-]+) +(?:error|warning|note) /gm)]
    .map((m) => m[1]!)
    .filter((id) => !id.startsWith('server/'));
  const section = readFileSync(join(REPO, 'docs/check.md'), 'utf8');
  const named = new Set([...section.matchAll(/`((?:unicode|credential|script|link|hidden|advice|spec)\/[a-z-]+)`/g)].map((m) => m[1]!));
  expect(listed.length).toBeGreaterThan(10);
  expect([...named].sort()).toEqual([...listed].sort());
});
