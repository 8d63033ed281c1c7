/**
 * The sandbox as a client sees it (SDK Client over stdio, the one-bin launch): skill_list and every
 * preview name the isolation level this machine gives, its mechanisms and the memory cap; the
 * elicitation prompt says the same in words; in the namespace levels a script cannot read a file of
 * the person's home or reach a service on 127.0.0.1, and its out-of-memory ends as a normal result
 * that says so.
 *
 * Tier `level`: what is asserted is the level's. The protocol era is not: the list, previews and runs
 * go over one 2026-07-28 server, the prompt over a 2025 one (form elicitation), and how each era
 * carries a preview, a prompt and a run is the front tier's (skill-run-confirm.test.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedLevel, hasBwrap, isRoot } from '../levels.js';
import { ERAS, callTool, expectNoLeftovers, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken } from './run-skills.js';

const level = expectedLevel(isRoot);
let root: string;
let home: string;
let listener: Server;
let port = 0;
let connections = 0;

beforeAll(async () => {
  root = tempDir('sandbox-skills');
  home = tempDir('sandbox-home');
  writeFileSync(join(home, 'private-notes.txt'), 'only mine', { mode: 0o644 });
  mkdirSync(join(root, 'probe', 'scripts'), { recursive: true, mode: 0o755 });
  writeFileSync(
    join(root, 'probe', 'SKILL.md'),
    `---
name: probe
description: probes the sandbox
mcp-host:
  version: 1
  run:
    - script: scripts/peek.py
      interpreter: python3
    - script: scripts/hog.py
      interpreter: python3
      memory: 128M
---
probe
`,
    { mode: 0o644 },
  );
  writeFileSync(
    join(root, 'probe', 'scripts', 'peek.py'),
    `import json, socket, sys
out = {}
try:
    out["home"] = open(sys.argv[1]).read()
except Exception as e:
    out["home"] = type(e).__name__
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("127.0.0.1", int(sys.argv[2]))); out["net"] = "connected"
except Exception as e:
    out["net"] = type(e).__name__
print(json.dumps(out))
`,
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'probe', 'scripts', 'hog.py'), 'b = bytearray(512 * 1024 * 1024)\nprint("allocated")\n', { mode: 0o644 });
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  listener.close();
  await expectNoLeftovers();
});

describe(`skill_run in the sandbox this machine gives (${level})`, () => {
  let served: Served;
  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: root, HOME: home }, ERAS[1]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  it('skill_list and the preview name the level, its mechanisms and the memory cap; the script asking for less gets less', async () => {
    const list = await skillList(served.client);
    const isolation = (list as unknown as { isolation: { level: string; mechanisms: string[]; memoryBytes: number } }).isolation;
    expect(isolation).toMatchObject({ level, memoryBytes: 1024 ** 3 });
    const preview = await askToken(served.client, { name: 'probe', script: 'scripts/hog.py' });
    const willRun = preview.preview.willRun as unknown as { isolation: string; sandbox: string[]; memoryBytes: number };
    expect(willRun).toMatchObject({ isolation: level, sandbox: isolation.mechanisms, memoryBytes: 128 * 1024 * 1024 });
  });

  it('the elicitation prompt says the level and the memory cap in words', async () => {
    let prompt = '';
    const asking = await serve({ SKILLS_DIR: root, HOME: home }, ERAS[0]!, {
      onElicit: (params) => {
        prompt = params.message;
        return { action: 'decline' };
      },
    });
    try {
      await callTool(asking.client, 'skill_run', { name: 'probe', script: 'scripts/hog.py', args: [] });
      expect(prompt).toContain(`isolation: ${level} (`);
      expect(prompt).toContain('memory cap: 128 MiB');
      if (level === 'same-uid') expect(prompt).toContain("runs as the server's own user");
    } finally {
      await asking.close();
    }
  });

  it('a script over its memory cap ends as a normal result that says so', async () => {
    const { confirmToken } = await askToken(served.client, { name: 'probe', script: 'scripts/hog.py' });
    const answer = await callTool(served.client, 'skill_run', { name: 'probe', script: 'scripts/hog.py', args: [], confirmToken });
    expect(answer.isError).toBe(false);
    expect(answer.value).toMatchObject({ status: 'completed', memoryLimited: true });
    expect(answer.value['stderr']).toContain('MemoryError');
  });

  it.skipIf(!hasBwrap(level))(
    "in the namespace sandbox a script cannot read the person's home or reach 127.0.0.1 (needs bubblewrap)",
    async () => {
      const args = [join(home, 'private-notes.txt'), String(port)];
      const { confirmToken } = await askToken(served.client, { name: 'probe', script: 'scripts/peek.py', args });
      const answer = await callTool(served.client, 'skill_run', { name: 'probe', script: 'scripts/peek.py', args, confirmToken });
      expect(JSON.parse(answer.value['stdout'] as string)).toEqual({ home: 'FileNotFoundError', net: 'ConnectionRefusedError' });
      expect(connections).toBe(0);
    },
  );
});
