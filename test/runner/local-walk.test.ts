/**
 * What reads a script's bytes stays out of the privileged runner (docs/architecture.md §8, "What
 * runs privileged"; docs/secrets-redaction.md, "Who redacts"): the walk of a run's workspace, the
 * measure of its data folder and redaction are in the walker's bundle, never in the runner's; a
 * runner without privilege runs the walker's code in its own process (runner/workspace/local-walk.ts),
 * and a root process refuses to. Against the built bundles (`npm test` builds first): as root the
 * refusal, as an ordinary uid the walk itself.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadWalkCode } from '../../runner/workspace/local-walk.js';
import { walkOrders } from '../../runner/workspace/walk-link.js';
import { makeWorkspace } from '../../runner/workspace/workspace.js';
import { isRoot } from '../levels.js';

const DIST = resolve(import.meta.dirname, '../../dist');
const WALK_BUNDLE = join(DIST, 'skill-mcp-walk.cjs');
const KEY = 'sk-live-7Hq2Lm9Xw4Zr';
const temp = mkdtempSync(join(tmpdir(), 'skill-mcp-local-walk-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe('the walk and redaction are out of the privileged runner', () => {
  it("attack: the runner's bundle holds no redaction, workspace walk or data-folder measure; the walker's does", () => {
    const runner = readFileSync(join(DIST, 'skill-mcp-runner.cjs'), 'utf8');
    const walker = readFileSync(WALK_BUNDLE, 'utf8');
    // The marker redaction writes, the redactor, the walk and the measure, each by a text only its code holds.
    for (const text of ['[secret:', 'Redactor', 'function collectOutputs(', 'function measureData(']) {
      expect(runner.includes(text), text).toBe(false);
      expect(walker.includes(text), text).toBe(true);
    }
  });

  it.skipIf(!isRoot)('attack: a root process refuses to load the walk into itself (skipped unless root)', () => {
    expect(loadWalkCode({ path: WALK_BUNDLE })).toEqual({ why: 'a root runner walks in a process of the run uid, never in its own' });
  });

  it.skipIf(isRoot)(
    "an ordinary user's runner loads the walker's code from its bundle and walks and redacts with it: files, names and streams (skipped as root)",
    () => {
      const code = loadWalkCode({ path: WALK_BUNDLE });
      if ('why' in code) throw new Error(code.why);
      const run = join(temp, 'run');
      mkdirSync(run, { mode: 0o700 });
      const ws = makeWorkspace(run, undefined, []);
      writeFileSync(join(ws.dir, 'out.txt'), `key=${KEY}\n`);
      writeFileSync(join(ws.dir, `${KEY}.txt`), 'named after it');
      const stdout = Buffer.from(`printed ${KEY}`);
      const result = code.walkRun(
        walkOrders({
          ws,
          budgetBytes: 4096,
          maxEntries: 64,
          redact: [{ name: 'API_KEY', value: KEY }],
          streams: { cap: 1024, stdout, stderr: Buffer.alloc(0), stdoutCut: false, stderrCut: false },
        }),
      );
      // Walked in the order of the names' bytes: `out.txt` before the one named after the key.
      expect(result.files.map((f) => [f.path, Buffer.from(f.bytes!).toString()])).toEqual([
        ['out.txt', 'key=[secret:API_KEY]\n'],
        ['[secret:API_KEY].txt', 'named after it'],
      ]);
      expect(Buffer.from(result.streams!.stdout).toString()).toBe('printed [secret:API_KEY]');
      expect(result.redacted).toEqual({ API_KEY: 3 });
      expect(JSON.stringify(result)).not.toContain(KEY);
    },
  );
});
