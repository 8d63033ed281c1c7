/**
 * A front never serves as root. A root-started front used to keep root whenever it did not start
 * its own runner (hosted markers such as MCP_SKILLS_PATH, or SKILL_MCP_RUNNER_SOCKET), and then
 * served a hard link to a root-only file (think /etc/shadow) planted in a skill. Now every
 * root-started front drops to SKILL_MCP_FRONT_UID/GID (default 61183) before it reads a request,
 * over stdio and over HTTP, whatever the mode.
 */
import { linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, startHttp } from '../http/harness.js';
import { callTool, ERAS, expectNoLeftovers, FRONT_UID, serve, SUITE_TMP, tempDir } from './harness.js';

const isRoot = process.getuid?.() === 0;
const SECRET = 'root:$6$only-root-may-read-this-line';
let root: string;

function uids(pid: number): string {
  return /^Uid:\s+(.*)$/m
    .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!
    .split(/\s+/)
    .join(' ');
}

beforeAll(() => {
  if (!isRoot) return;
  root = tempDir('planted');
  mkdirSync(join(root, 'vault'), { mode: 0o755 });
  writeFileSync(
    join(root, 'vault', 'SKILL.md'),
    '---\nname: vault\ndescription: Reads like notes, is a link to a root-only file.\n---\nSee notes.txt.\n',
    { mode: 0o644 },
  );
  // A root-only 0600 file on the same filesystem, hard-linked into the skill (a link cannot be told
  // from the original: same inode, same owner and mode).
  const shadow = join(SUITE_TMP, 'shadow-like');
  writeFileSync(shadow, `${SECRET}\n`, { mode: 0o600 });
  linkSync(shadow, join(root, 'vault', 'notes.txt'));
});
afterAll(expectNoLeftovers);

// Needs root: the privilege drop only happens when the front starts as root (CI does).
describe.skipIf(!isRoot)('a root-started front, whatever the mode, serves as the unprivileged front uid', () => {
  test.each([
    ['hosted (MCP_SKILLS_PATH)', { MCP_SKILLS_PATH: 'ROOT' }],
    ['hosted (MCP_DATA_DIR)', { MCP_DATA_DIR: 'DATA', SKILLS_DIR: 'ROOT' }],
    ['an explicit SKILL_MCP_RUNNER_SOCKET', { SKILLS_DIR: 'ROOT', SKILL_MCP_RUNNER_SOCKET: '/nonexistent/runner.sock' }],
  ])('stdio, %s: a hard link to a root-only 0600 file is not served, and /proc shows uid 61183', async (_name, template) => {
    const env = Object.fromEntries(Object.entries(template).map(([k, v]) => [k, v === 'ROOT' ? root : v === 'DATA' ? tempDir('data') : v]));
    const served = await serve(env, ERAS[0]!);
    try {
      expect(uids(served.pid)).toBe(`${FRONT_UID} ${FRONT_UID} ${FRONT_UID} ${FRONT_UID}`);
      const answer = await callTool(served.client, 'skill_file', { name: 'vault', paths: ['notes.txt'] });
      expect(answer.text).not.toContain(SECRET);
      const file = (answer.value['files'] as { error?: { code: string } }[] | undefined)?.[0];
      expect(file?.error?.code ?? (answer.value['error'] as { code?: string } | undefined)?.code).toBe('READ_FAILED');
    } finally {
      await served.close();
    }
  });

  test('HTTP, hosted (MCP_SKILLS_PATH): the listening front is uid 61183 and does not serve the link', async () => {
    const server = await startHttp({ MCP_SKILLS_PATH: root, TMPDIR: SUITE_TMP });
    try {
      expect(uids(server.process.pid!)).toBe(`${FRONT_UID} ${FRONT_UID} ${FRONT_UID} ${FRONT_UID}`);
      const client = await connectClient(server.url, 'legacy');
      try {
        const result = await client.callTool({ name: 'skill_file', arguments: { name: 'vault', paths: ['notes.txt'] } });
        expect(JSON.stringify(result)).not.toContain(SECRET);
        expect(JSON.stringify(result)).toContain('READ_FAILED');
      } finally {
        await client.close();
      }
    } finally {
      await server.stop();
    }
  });
});
