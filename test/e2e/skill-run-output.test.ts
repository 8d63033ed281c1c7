/**
 * A script's output reaches the client whatever the script writes: readable text as `stdout` /
 * `stderr`, anything else (binary, control bytes, text whose JSON escaping would balloon) as
 * `stdoutBase64` / `stderrBase64`, byte for byte. Attack: a hostile script printing 1 MiB of NULs
 * or quotes used to blow one answer past the client's 10 MiB message limit and cut the connection.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';

const MIB = 1024 * 1024;
const SCRIPTS: Record<string, string> = {
  // 2 MiB of NULs on stdout, 2 MiB of quotes on stderr: both past the 1 MiB cap.
  'flood.js': 'process.stdout.write(Buffer.alloc(2 * 1024 * 1024)); process.stderr.write(Buffer.alloc(2 * 1024 * 1024, 0x22));',
  // Bytes that are not UTF-8, then exit 4.
  'binary.js': 'process.stdout.write(Buffer.from([0xff, 0xfe, 0x00, 0x41])); process.exitCode = 4;',
  'text.js': 'process.stdout.write("héllo \\"world\\"\\n"); process.stderr.write("warn\\n");',
};

function writeSkill(): string {
  const root = tempDir('output');
  const rows = Object.keys(SCRIPTS)
    .map((s) => `    - script: ${s}\n      interpreter: node\n      timeout: 20`)
    .join('\n');
  const files = {
    'SKILL.md': `---\nname: noisy\ndescription: Scripts with awkward output.\nmcp-host:\n  version: 1\n  run:\n${rows}\n---\nx\n`,
    ...SCRIPTS,
  };
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, 'noisy', path);
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    writeFileSync(full, text, { mode: 0o644 });
  }
  return root;
}

describe.each(ERAS)('skill_run output, %s', (era) => {
  let served: Served;
  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: writeSkill(), MCP_CONFIRM_MODE: 'auto' }, era);
  });
  afterAll(async () => {
    await served.close();
  });

  async function run(script: string): Promise<Record<string, unknown>> {
    const first = await callTool(served.client, 'skill_run', { name: 'noisy', script, args: [] });
    const token = first.value['confirmToken'] as string;
    const answer = await callTool(served.client, 'skill_run', { name: 'noisy', script, args: [], confirmToken: token });
    expect(answer.value['status'], answer.text).toBe('completed');
    return answer.value;
  }

  it('a flood of NULs and quotes comes back as base64 of the first MiB of each stream, and the connection survives', async () => {
    const value = await run('flood.js');
    expect(value['stdout']).toBeUndefined();
    // Buffer.equals, not toEqual: vitest's deep equality walks a 1 MiB Buffer byte by byte (~8 s,
    // load-dependent); equals is one memcmp, and a mismatch still fails with the lengths shown.
    const out = Buffer.from(value['stdoutBase64'] as string, 'base64');
    const err = Buffer.from(value['stderrBase64'] as string, 'base64');
    expect([out.length, out.equals(Buffer.alloc(MIB))]).toEqual([MIB, true]);
    expect([err.length, err.equals(Buffer.alloc(MIB, 0x22))]).toEqual([MIB, true]);
    expect(value).toMatchObject({ truncated: true, stdoutBytes: 2 * MIB, stderrBytes: 2 * MIB });
    // The same connection still answers.
    expect((await callTool(served.client, 'skill_list')).isError).toBe(false);
  });

  it('bytes that are not UTF-8 are returned exactly (base64), with the exit code', async () => {
    const value = await run('binary.js');
    expect(Buffer.from(value['stdoutBase64'] as string, 'base64')).toEqual(Buffer.from([0xff, 0xfe, 0x00, 0x41]));
    expect(value['exitCode']).toBe(4);
  });

  it('readable text stays text', async () => {
    const value = await run('text.js');
    expect(value).toMatchObject({ stdout: 'héllo "world"\n', stderr: 'warn\n', truncated: false });
  });
});

afterAll(expectNoLeftovers);
