/**
 * The README and the code agree (docs/architecture.md §9): the README's check section names every
 * authoring rule the built bin lists in `skill-mcp check --help`, and no rule the bin does not have.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO, runCheck, workspace } from './harness.js';

it('the README names exactly the authoring rules `check --help` lists', () => {
  const help = runCheck(workspace(), ['--help']).stdout;
  const listed = [...help.matchAll(/^ {2}([a-z]+\/[a-z-]+) +(?:error|warning|note) /gm)]
    .map((m) => m[1]!)
    .filter((id) => !id.startsWith('server/'));
  const section = readFileSync(join(REPO, 'README.md'), 'utf8').split('\n## Check skills before you serve them\n')[1]!.split('\n## ')[0]!;
  const named = new Set([...section.matchAll(/`((?:unicode|credential|script|link|hidden|advice|spec)\/[a-z-]+)`/g)].map((m) => m[1]!));
  expect(listed.length).toBeGreaterThan(10);
  expect([...named].sort()).toEqual([...listed].sort());
});
