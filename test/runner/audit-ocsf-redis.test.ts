/**
 * `skill-mcp audit query --redis URL --format ocsf` (docs/audit.md, "OCSF"): the Redis stream every
 * runner mirrors its log into, read through the query's filters and written as OCSF events whose
 * device is each line's host; every event checked against the class facts (test/ocsf.ts). A real
 * redis-server and the built bin; the stream's entries written as the mirror writes them.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ocsfProblems } from '../ocsf.js';
import { NO_REDIS_REASON, REDIS_SERVER, startRedis, type RedisHandle } from '../redis-harness.js';
import { BIN } from './harness.js';

const TS = '2026-12-07T07:00:00.000Z';
const LINES: [string, Record<string, unknown>][] = [
  ['web-a', { seq: 1, ts: TS, event: 'runner.start', pid: 1 }],
  [
    'web-a',
    {
      seq: 2,
      ts: TS,
      event: 'run.accept',
      run_id: 'ra',
      skill: 'rules',
      script: 'try.py',
      interpreter: 'python3',
      argv: ['try.py'],
      requester: 'alice',
    },
  ],
  [
    'web-b',
    {
      seq: 1,
      ts: TS,
      event: 'egress.request',
      run_id: 'rb',
      destination: 'api.example.com:443',
      method: 'POST',
      path: '/v1/items/1',
      decision: 'refused',
      reason: 'no-rule',
      status: 403,
      bytes_up: 0,
      bytes_down: 0,
    },
  ],
  ['web-a', { seq: 3, ts: TS, event: 'run.exit', run_id: 'ra', exit_code: 0, signal: null, ended: 'exit' }],
];

describe.skipIf(!REDIS_SERVER)(`audit query --redis --format ocsf${REDIS_SERVER ? '' : ` (skipped: ${NO_REDIS_REASON})`}`, () => {
  let redis: RedisHandle;
  beforeAll(async () => {
    redis = await startRedis();
    for (const [host, line] of LINES)
      redis.cli('xadd', 'o1:audit', '*', 'host', host, 'seq', String(line['seq']), 'line', JSON.stringify(line));
  }, 60_000);
  afterAll(async () => {
    await redis?.kill();
  });

  function query(...args: string[]) {
    return spawnSync(process.execPath, [BIN, 'audit', 'query', '--redis', redis.url, ...args], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_REDIS_PREFIX: 'o1:' },
      timeout: 60_000,
    });
  }

  it('the lines of every host become valid OCSF events, each device named by its host; lines with no class are counted', () => {
    const got = query('--format', 'ocsf');
    expect(got.status, got.stderr).toBe(0);
    const events = got.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const event of events) expect({ event, problems: ocsfProblems(event) }).toMatchObject({ problems: [] });
    expect(events.map((e) => `${String(e['class_uid'])}/${String(e['activity_id'])}`)).toEqual(['1007/1', '3003/1', '4002/6', '1007/2']);
    expect(events[0]).toMatchObject({ device: { hostname: 'web-a' }, process: { uid: 'ra' } });
    expect(events[2]).toMatchObject({
      dst_endpoint: { hostname: 'api.example.com', port: 443 },
      status_id: 2,
      http_response: { code: 403 },
    });
    expect(got.stderr).toContain('runner.start ×1');
  });

  it('the filters apply: --run keeps one run', () => {
    const got = query('--run', 'rb', '--format', 'ocsf');
    expect(got.status, got.stderr).toBe(0);
    expect(got.stdout.trim().split('\n')).toHaveLength(1);
    expect(query('--run', 'rb', '--json').stdout.trim()).toBe(JSON.stringify(LINES[2]![1]));
  });
});
