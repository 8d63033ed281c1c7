/**
 * One writer at a time across replicas (docs/isolation.md, "Data folders"): two real runners with
 * state folders of their own share one real `redis-server` and one host base (`MCP_DATA_DIR`); a run
 * of a folder on one is refused BUSY on the other while it lasts, its approval kept, and runs there
 * once it ended. A Redis that cannot answer refuses runs of data folders (LEDGER_UNAVAILABLE).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, NO_REDIS_REASON, REDIS_SERVER, type RedisHandle } from '../redis-harness.js';
import { startRunner, tempDir, text, uidRange, until, writeSkills, type RunnerHandle } from './harness.js';

const HOLD = `import os, sys, time
d = os.environ['MCP_DATA_DIR']
open(os.path.join(d, 'started-' + sys.argv[1]), 'w').close()
while sys.argv[1] == 'a' and not os.path.exists(os.path.join(d, 'go')):
    time.sleep(0.02)
print('done', sys.argv[1])
`;
const skills = writeSkills({ holder: { run: [{ script: 'hold.py', interpreter: 'python3', timeout: 60 }], files: { 'hold.py': HOLD } } });

describe.skipIf(!REDIS_SERVER)(`replicas sharing a Redis and a data base${REDIS_SERVER ? '' : ` (skipped: ${NO_REDIS_REASON})`}`, () => {
  let redis: RedisHandle;
  const runners: RunnerHandle[] = [];
  const base = tempDir('replica-data');
  const folder = join(base, 'holder', 'anyone');
  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      SKILLS_DIR: skills,
      MCP_DATA_DIR: base,
      MCP_SKILL_RUN: JSON.stringify([{ skill: 'holder', script: 'hold.py' }]),
      MCP_SKILL_ALLOW_UNSCRUBBED: '1',
      SKILL_MCP_REDIS_URL: redis.url,
      SKILL_MCP_RUN_QUEUE_MS: '0',
      SKILL_MCP_UID_RANGE: uidRange(27),
      SKILL_MCP_DATA_GID_RANGE: '60300-60331',
    };
    runners.push(...(await Promise.all([startRunner({ env }), startRunner({ env })])));
  }, 60_000);
  afterAll(async () => {
    for (const r of runners) await r.stop();
  });

  it("a run of a folder on one replica makes the other's BUSY, its approval kept for after", async () => {
    const [a, b] = runners as [RunnerHandle, RunnerHandle];
    const first = await a.client.prepare({ skill: 'holder', script: 'hold.py', args: ['a'] });
    if (!first.ok) throw new Error(first.error.message);
    const held = a.client.run(
      { skill: 'holder', script: 'hold.py', args: ['a'], confirmToken: first.result.confirmToken },
      { timeoutMs: 60_000 },
    );
    expect(await until(() => existsSync(join(folder, 'started-a')), 30_000)).toBe(true);
    const second = await b.client.prepare({ skill: 'holder', script: 'hold.py', args: ['b'] });
    if (!second.ok) throw new Error(second.error.message);
    const request = { skill: 'holder', script: 'hold.py', args: ['b'], confirmToken: second.result.confirmToken };
    const busy = await b.client.run(request, { timeoutMs: 60_000 });
    expect(busy.ok).toBe(false);
    if (!busy.ok) expect(busy.error.code).toBe('BUSY');
    expect(existsSync(join(folder, 'started-b'))).toBe(false);
    writeFileSync(join(folder, 'go'), '');
    const ran = await held;
    expect(ran.ok && text(ran.result.stdout).trim()).toBe('done a');
    const after = await b.client.run(request, { timeoutMs: 60_000 });
    expect(after.ok ? text(after.result.stdout).trim() : JSON.stringify(after.error)).toBe('done b');
    // Each turn was given back: no key is left.
    expect(redis.cli('--scan', '--pattern', 'skill-mcp:data:*').trim()).toBe('');
  }, 90_000);

  it('with Redis away a run of a data folder is refused LEDGER_UNAVAILABLE, its approval kept', async () => {
    const b = runners[1]!;
    const prepared = await b.client.prepare({ skill: 'holder', script: 'hold.py', args: ['b'] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    await redis.kill();
    const refused = await b.client.run({ skill: 'holder', script: 'hold.py', args: ['b'], confirmToken: prepared.result.confirmToken });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.code).toBe('LEDGER_UNAVAILABLE');
  }, 60_000);
});
