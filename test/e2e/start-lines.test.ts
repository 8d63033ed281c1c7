/**
 * Said once, clearly (docs/configuration.md, "What stderr says"): a server says on stderr that it is
 * ready, what it serves and where it waits — one line — and keeps its internal notes (how the
 * folders are watched, how a run's limits are set, its own runner's start) for
 * SKILL_MCP_LOG_LEVEL=debug. Through the built bin over stdio (the runner started by a skill_list)
 * and over HTTP, at this machine's level (as root the runner's notes differ: the level tier).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttp } from '../http/harness.js';
import { ERAS, expectNoLeftovers, REPO, serve, skillList } from './harness.js';

afterAll(expectNoLeftovers);

const BUNDLED = join(REPO, 'skills');
const READY = `skill-mcp: serving 1 skill from the bundled skills (${BUNDLED}); waiting for an MCP client on stdin`;
/** Internal notes: never said at the default level. */
const INTERNAL = [
  /watching the skill folders/,
  /rlimits are set by a prlimit step/,
  /ready on /,
  /spawned by Node's child_process/,
  /debug: /,
];
/** The code cache's own line (cli/boot.ts) is not one of this test's: it depends on how the bundle was built. */
const ownLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l !== '' && !l.includes('start-up code cache'));

describe('what a server says on stderr', () => {
  it('over stdio, by default: the one ready line, first, and none of the internal notes — also after its runner started', async () => {
    const served = await serve({}, ERAS[0]!);
    try {
      await served.waitForStderr(/waiting for an MCP client on stdin/);
      // A skill_list starts the runner: its own start is internal too.
      expect((await skillList(served.client)).skills.map((s) => s.name)).toEqual(['commit-message']);
      const lines = ownLines(served.stderr());
      expect(lines[0]).toBe(READY);
      expect(lines.filter((l) => l === READY)).toHaveLength(1);
      for (const note of INTERNAL) expect(lines.filter((l) => note.test(l))).toEqual([]);
    } finally {
      await served.close();
    }
  });

  it('SKILL_MCP_LOG_LEVEL=debug adds the internal notes, each marked debug', async () => {
    const served = await serve({ SKILL_MCP_LOG_LEVEL: 'debug' }, ERAS[0]!);
    try {
      await served.waitForStderr(/debug: watching the skill folders for changes \(\d+ folders\)/);
      await skillList(served.client);
      await served.waitForStderr(/skill-mcp runner: debug: ready on /);
      expect(ownLines(served.stderr())).toContain(READY);
    } finally {
      await served.close();
    }
  });

  it('a SKILL_MCP_LOG_LEVEL it does not know is said, and the default kept', async () => {
    const served = await serve({ SKILL_MCP_LOG_LEVEL: 'verbose' }, ERAS[0]!);
    try {
      await served.waitForStderr(/waiting for an MCP client on stdin/);
      expect(served.stderr()).toContain('SKILL_MCP_LOG_LEVEL="verbose" is not info or debug; using info');
      expect(served.stderr()).not.toContain('debug: ');
    } finally {
      await served.close();
    }
  });

  it('over HTTP: what it serves and where it listens, in one line', async () => {
    const server = await startHttp();
    try {
      const lines = ownLines(server.stderr());
      expect(lines).toContainEqual(
        expect.stringMatching(
          new RegExp(`^skill-mcp: serving 1 skill from the bundled skills \\(${BUNDLED}\\); listening on http://127\\.0\\.0\\.1:\\d+/mcp$`),
        ),
      );
      for (const note of INTERNAL) expect(lines.filter((l) => note.test(l))).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});
