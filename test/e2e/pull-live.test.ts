/**
 * A pull into a folder a live server is serving (issue 26, item 4): the built bin serves DIR over
 * stdio to the SDK's Client while `skill-mcp pull --index` replaces a skill of 200 files. A client
 * reading the skill over and over during the pull must see, in every read, either the old version
 * whole or the new one whole (each file carries its version; skills/get's digests are compared
 * with both versions' exact sets), never a mix and never a missing skill; afterwards the new
 * version is served. A pull that fails (a digest that does not match) changes nothing served.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tgz } from '../pull/tar-write.js';
import { callTool, ERAS, serve, tempDir, type Served } from './harness.js';
import { runPull, storeOf } from './pull-run.js';

const FILES = 200;
const sha = (b: string | Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Version `v` of the skill: SKILL.md and 199 files, each naming the version. */
function version(v: number): Record<string, string> {
  const files: Record<string, string> = { 'SKILL.md': `---\nname: many\ndescription: A skill of many files.\n---\nversion ${v}\n` };
  for (let i = 1; i < FILES; i++) files[`refs/file-${String(i).padStart(3, '0')}.md`] = `version ${v}\n${'x'.repeat(i * 7)}\n`;
  return files;
}
const digestSet = (files: Record<string, string>): string => Object.values(files).map(sha).sort().join(',');

let http: Server;
let index: string;
let body: Buffer = Buffer.alloc(0);
let archive: Buffer = Buffer.alloc(0);

function publish(v: number, lie = false): void {
  archive = tgz(Object.entries(version(v)).map(([name, b]) => ({ name, body: b })));
  body = Buffer.from(
    JSON.stringify({
      $schema: 'https://schemas.agentskills.io/discovery/0.2.0/schema.json',
      skills: [{ name: 'many', type: 'archive', description: 'x', url: 'many.tar.gz', digest: lie ? sha('other bytes') : sha(archive) }],
    }),
  );
}

beforeAll(async () => {
  http = createServer((req, res) => {
    if (req.url === '/.well-known/agent-skills/index.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    if (req.url === '/.well-known/agent-skills/many.tar.gz')
      return void res.writeHead(200, { 'content-type': 'application/gzip' }).end(archive);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  index = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => http.close(() => resolve())));

type Seen = 'v1' | 'v2' | `mixed: ${string}` | `error: ${string}`;

/** One whole-skill read: the published digests, and 8 files in one skill_file call. */
async function readOnce(served: Served, round: number): Promise<Seen[]> {
  const out: Seen[] = [];
  try {
    const entry = (await served.skills.get('skill://many/SKILL.md')).skill;
    const set = (entry.resources as { digest: string }[])
      .map((r) => r.digest)
      .sort()
      .join(',');
    out.push(set === digestSet(version(1)) ? 'v1' : set === digestSet(version(2)) ? 'v2' : 'mixed: skills/get digests are neither version');
  } catch (error) {
    out.push(`error: ${error instanceof Error ? error.message : String(error)}`);
  }
  const paths = [
    'SKILL.md',
    ...Array.from({ length: 7 }, (_, i) => `refs/file-${String(((round * 7 + i) % (FILES - 1)) + 1).padStart(3, '0')}.md`),
  ];
  const answer = await callTool(served.client, 'skill_file', { name: 'many', paths });
  if (answer.isError) return [...out, `error: ${answer.text}`];
  const versions = new Set(
    (answer.value['files'] as { text?: string; error?: unknown }[]).map((f) =>
      f.error ? 'error' : /version (\d)/.exec(f.text ?? '')?.[1],
    ),
  );
  out.push(
    versions.size === 1 && (versions.has('1') || versions.has('2'))
      ? versions.has('1')
        ? 'v1'
        : 'v2'
      : `mixed: skill_file gave ${[...versions].join(', ')}`,
  );
  return out;
}

describe('pull into a folder a live server is serving', () => {
  let served: Served;
  let dir: string;

  beforeAll(async () => {
    dir = join(tempDir('pull-live'), 'skills');
    publish(1);
    const first = await runPull(['--to', dir, '--index', index]);
    expect(first.code, first.stderr + first.stdout).toBe(0);
    served = await serve(
      { SKILLS_DIR: dir, SKILL_MCP_STATE_DIR: join(tempDir('pull-live-state'), 'state'), SKILL_MCP_LOG_LEVEL: 'debug' },
      ERAS[0]!,
    );
    await served.waitForStderr(/watching the skill folders/);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('every read during the pull sees all of the old version or all of the new, never a mix; then the new one is served', async () => {
    expect(await readOnce(served, 0)).toEqual(['v1', 'v1']);
    publish(2);
    const seen: Seen[] = [];
    let pulling = true;
    const pull = runPull(['--to', dir, '--index', index]).finally(() => (pulling = false));
    let round = 1;
    while (pulling) seen.push(...(await readOnce(served, round++)));
    const run = await pull;
    expect(run.code, run.stderr + run.stdout).toBe(0);
    // After the pull: read until the catalog has followed the link (bounded; each read is checked too).
    const settled = (): boolean => seen.at(-1) === 'v2' && seen.at(-2) === 'v2';
    for (let i = 0; i < 600 && !settled(); i++) {
      seen.push(...(await readOnce(served, round++)));
      if (!settled()) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(
      seen.filter((s) => s !== 'v1' && s !== 'v2'),
      'no read saw a mix or an error',
    ).toEqual([]);
    expect(settled()).toBe(true);
    expect(await readOnce(served, round)).toEqual(['v2', 'v2']);
    // Versions only move forward: once a read of one kind saw v2, no later read of that kind saw v1.
    for (const kind of [0, 1]) {
      const reads = seen.filter((_, i) => i % 2 === kind);
      expect(reads.slice(reads.indexOf('v2'))).not.toContain('v1');
    }
    // The store keeps the snapshot just replaced (reads under way in it finish) and nothing older.
    expect(storeOf(dir)['many']).toHaveLength(2);
  });

  test('a pull that fails its digest check changes nothing served, and leaves no new snapshot', async () => {
    const before = storeOf(dir)['many'];
    publish(3, true);
    const run = await runPull(['--to', dir, '--index', index]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/nothing was written/);
    expect(await readOnce(served, 0)).toEqual(['v2', 'v2']);
    expect(storeOf(dir)['many']).toEqual(before);
    expect(readdirSync(dir).filter((n) => n.startsWith('.skill-mcp-') && n !== '.skill-mcp-store' && n !== '.skill-mcp-lock.json')).toEqual(
      [],
    );
  });
});
