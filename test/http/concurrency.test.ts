/**
 * Stateless serving under load: 100 SDK clients at once (half in each era), each listing the
 * skills and reading every published file over its own Streamable HTTP transport, every byte
 * checked against the manifest's digest. No request may fail.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { connectClient, startHttp, type HttpServer } from './harness.js';

const CLIENTS = 100;
let server: HttpServer;
beforeAll(async () => {
  // Idle keep-alive sockets stay open for the test's length: a server closing one the very moment a
  // client (starved on a busy machine) reuses it is "fetch failed" — a race of timers, not of serving.
  server = await startHttp({ SKILL_MCP_HTTP_KEEP_ALIVE_TIMEOUT_MS: '120000' });
});
afterAll(async () => {
  await server.stop();
});

function bytesOf(content: { text?: string; blob?: string }): Buffer {
  return content.text !== undefined ? Buffer.from(content.text, 'utf8') : Buffer.from(content.blob ?? '', 'base64');
}

async function oneClient(index: number): Promise<number> {
  const client = await connectClient(server.url, index % 2 === 0 ? 'legacy' : 'modern');
  try {
    const { skills } = await new SkillsClient(client).list();
    let read = 0;
    for (const skill of skills) {
      for (const file of skill.resources) {
        if (typeof file === 'string') throw new Error(`${skill.uri}: a "dynamic" entry; the bundled skills publish digests`);
        const result = await client.readResource({ uri: file.uri });
        const bytes = bytesOf(result.contents[0] as { text?: string; blob?: string });
        expect(bytes.length, file.uri).toBe(file.size);
        expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, file.uri).toBe(file.digest);
        read += 1;
      }
    }
    return read;
  } finally {
    await client.close();
  }
}

test(`${CLIENTS} concurrent clients read every file without an error`, async () => {
  const results = await Promise.allSettled(Array.from({ length: CLIENTS }, (_, i) => oneClient(i)));
  const failures = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
  expect(failures).toEqual([]);
  const counts = results.map((r) => (r as PromiseFulfilledResult<number>).value);
  expect(Math.min(...counts)).toBeGreaterThan(0);
  expect(new Set(counts).size).toBe(1);
  expect(server.stderr()).not.toMatch(/http: /);
}, 60_000);
