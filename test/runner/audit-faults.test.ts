/**
 * The audit log under injected write faults (ENOSPC, EIO, EACCES at random points of random
 * writes, seeded): it never throws into its caller, every run whose accept line was written has
 * exactly one accept and one terminal line (its exit, or the reject that says why it did not go
 * ahead), no line is written twice, the chain stays intact, and each outage is recorded in an
 * `audit.gap` line once the log can be written again.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditLog, type FaultPoint } from '../../runner/audit/log.js';
import { signerFrom } from '../../runner/audit/signing.js';
import { verifyAuditText } from '../../runner/audit/verify.js';
import { tempDir } from './harness.js';

/** mulberry32: a small seeded generator, so a failing seed can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CODES = ['ENOSPC', 'EIO', 'EACCES'];

async function scenario(seed: number): Promise<void> {
  const random = rng(seed);
  const dir = tempDir(`faults-${seed}`);
  const path = join(dir, 'audit.log');
  let failing = true;
  const fault = (point: FaultPoint): void => {
    if (failing && (point === 'write' || point === 'sync') && random() < 0.3) {
      throw Object.assign(new Error(`injected ${point} failure`), { code: CODES[Math.floor(random() * CODES.length)] });
    }
  };
  const audit = new AuditLog({
    path,
    anchorPath: join(dir, 'audit.head'),
    fault,
    signer: signerFrom(generateKeyPairSync('ed25519').privateKey),
    maxBytes: random() < 0.5 ? 4096 : undefined,
  });
  audit.begin(() => ({ event: 'runner.start', seed }));
  const runs = Array.from({ length: 40 }, (_, i) => `run${i}`);
  // Runs as the service does them: prepare, accept (a commit), egress lines, exit; a refused commit becomes a reject naming the run.
  await Promise.all(
    runs.map(async (runId, i) => {
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 5)));
      void audit.append({ event: 'run.prepare', skill: 's', script: `${i}` });
      try {
        await audit.commit({
          event: 'run.accept',
          run_id: runId,
          runner_pid: process.pid,
          token_id: 't',
          skill: 's',
          script: 'a',
          interpreter: 'node',
          argv: [],
          env_names: [],
          timeout_ms: 1000,
          isolation: 'same-uid',
          sandbox: [],
          memory_bytes: 1,
          uid: 0,
        });
      } catch (error) {
        expect((error as { code?: string }).code).toBe('AUDIT_UNAVAILABLE');
        await audit.append({ event: 'run.reject', reason: 'audit-unavailable', run_id: runId });
        return;
      }
      for (let n = Math.floor(random() * 3); n > 0; n--)
        void audit.append({ event: 'egress', run_id: runId, destination: 'x:443', decision: 'allowed' } as never);
      // The exit line as the run path writes it: its answer waits for the line on disk, not for the anchor.
      await audit.appendDurable({ event: 'run.exit', run_id: runId, exit_code: 0 });
    }),
  );
  failing = false;
  // The disk is back: the next line (and the retry timer) write what waited.
  await audit.append({ event: 'token.released', token_id: 'last' });
  await audit.close(() => ({ event: 'runner.stop', pid: process.pid, config_sha256: '0'.repeat(64), uptime_ms: 0, lines: 0, why: 'test' }));

  const { allSegments } = await import('../../runner/audit/segments.js');
  const text = allSegments(path)
    .map((p) => readFileSync(p, 'utf8'))
    .join('');
  expect(verifyAuditText(text)).toMatchObject({ ok: true });
  const lines = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const runId of runs) {
    const own = lines.filter((l) => l['run_id'] === runId);
    const accepts = own.filter((l) => l['event'] === 'run.accept').length;
    const terminals = own.filter((l) => l['event'] === 'run.exit' || l['event'] === 'run.reject').length;
    expect({ runId, accepts: Math.min(accepts, 1), terminals }).toEqual({ runId, accepts: Math.min(accepts, 1), terminals: 1 });
    expect(accepts).toBeLessThanOrEqual(1);
  }
  expect(lines.filter((l) => l['event'] === 'runner.start')).toHaveLength(1);
  expect(lines.at(-1)).toMatchObject({ event: 'audit.checkpoint' });
  const gaps = lines.filter((l) => l['event'] === 'audit.gap');
  const refused = lines.filter((l) => l['reason'] === 'audit-unavailable').length;
  if (refused > 0) expect(gaps.length).toBeGreaterThan(0);
  for (const gap of gaps)
    expect(gap).toMatchObject({ error: expect.stringMatching(/^E/), from: expect.any(String), to: expect.any(String), lost: 0 });
  // The anchor is staged beside the log's fsync: a batch whose fsync failed leaves no staged anchor
  // behind, and the anchor in place names the last line written.
  expect(readdirSync(dir).filter((name) => name.startsWith('audit.head.'))).toEqual([]);
  const anchor = JSON.parse(readFileSync(join(dir, 'audit.head'), 'utf8')) as { seq: number };
  expect(anchor.seq).toBe(lines.at(-1)!['seq']);
}

describe('audit appends with injected faults (seeded)', () => {
  it.each(Array.from({ length: 12 }, (_, i) => [i + 1]))(
    'seed %i: one accept and one terminal line per run, no crash, the gap recorded',
    async (seed) => {
      await scenario(seed);
    },
  );
});
