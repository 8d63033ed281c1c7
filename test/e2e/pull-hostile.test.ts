/**
 * `skill-mcp pull` against a deliberately hostile server (test/fixtures/hostile-skill-server.mjs),
 * once with the SEP-2640 extension and once FastMCP-style (resources and `_manifest`): traversal
 * and absolute paths, dot and traversal names, a lying digest, an oversized file, a file bigger
 * than it says, a read answered with another resource. The good skill beside them arrives byte for
 * byte; each hostile one writes nothing, anywhere, and the report says why.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPO, expectNoLeftovers, tempDir } from './harness.js';
import { filesUnder, readLockFile, runPull, sha256, type PullRun } from './pull-run.js';

afterAll(expectNoLeftovers);

const HOSTILE_SERVER = `${REPO}test/fixtures/hostile-skill-server.mjs`;
const md = (name: string): string => `---\nname: ${name}\ndescription: The ${name} skill.\n---\n# ${name}\n\nInstructions.\n`;
/** What the hostile server's one good skill holds. */
const GOOD: Record<string, Buffer> = {
  SKILL: Buffer.from(md('good')),
  'refs/a b.md': Buffer.from('# A\n\nbytes \u00e9\r\n'),
  'img/x.bin': Buffer.from([0, 255, 1, 254, 10, 13]),
};

describe.each(['sep', 'manifest'])('a hostile server (%s)', (mode) => {
  let run: PullRun;
  let base: string;
  let dir: string;
  let readLog: string;

  const refusal = (name: string): string | undefined => run.lines.find((l) => l.kind === 'refused' && l.name === name)?.text;

  test('the pull exits 1, the good skill arrives byte for byte, and nothing else is written in or beside the target', async () => {
    base = tempDir(`pull-hostile-${mode}`);
    dir = join(base, 'skills');
    readLog = join(base, 'reads.log');
    run = await runPull(['--to', dir, '--', process.execPath, HOSTILE_SERVER, mode, readLog]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.lines.filter((l) => l.kind === 'added').map((l) => l.name)).toEqual(['good']);
    expect(filesUnder(dir)).toEqual(['.skill-mcp-lock.json', 'good/SKILL.md', 'good/img/x.bin', 'good/refs/a b.md']);
    expect(readFileSync(join(dir, 'good', 'SKILL.md')).equals(GOOD['SKILL']!)).toBe(true);
    expect(readFileSync(join(dir, 'good', 'refs', 'a b.md')).equals(GOOD['refs/a b.md']!)).toBe(true);
    expect(readFileSync(join(dir, 'good', 'img', 'x.bin')).equals(GOOD['img/x.bin']!)).toBe(true);
    expect(filesUnder(base).sort()).toEqual(['reads.log', ...filesUnder(dir).map((f) => `skills/${f}`)].sort());
    expect(
      existsSync('/tmp/escape.txt') && readFileSync('/tmp/escape.txt', 'utf8') === 'escaped\n',
      'the absolute path was not written',
    ).toBe(false);
    expect(existsSync(join(dirname(base), 'escape.txt'))).toBe(false);
    expect(Object.keys(readLockFile(dir).skills)).toEqual(['good']);
    expect(readLockFile(dir).skills['good']!.files['SKILL.md']).toBe(sha256(GOOD['SKILL']!));
    expect(run.stdout).toMatch(/^pull: 1 added, 0 updated, 0 unchanged, 9 refused$/m);
  });

  test('attack: a file path with ".." segments (%2e%2e in a URI) is refused by the path rules', () => {
    expect(refusal('traversal')).toMatch(
      /the file path "..\/..\/escape.txt" is refused: the path must not hold "." or ".." segments; nothing written/,
    );
  });

  test('attack: an absolute file path is refused', () => {
    const why = mode === 'sep' ? run.lines.find((l) => l.name === 'skill://absolute/SKILL.md')?.text : refusal('absolute');
    expect(why).toMatch(mode === 'sep' ? /outside the skill directory/ : /"\/tmp\/escape.txt" is refused: the path must be relative/);
  });

  test('attack: a dotfile (.git/hooks/post-checkout) is never pulled', () => {
    expect(refusal('dotfile')).toMatch(/".git\/hooks\/post-checkout" is hidden \(a dot-name\); hidden files are never pulled/);
  });

  test('attack: skill names ".." and ".hidden" are refused; no folder is made for them', () => {
    if (mode === 'sep') {
      // The SDK's entry checks (SkillsClient) refuse these before ours are reached.
      expect(refusal('skill://%2e%2e/SKILL.md')).toMatch(/skills\/list entry is invalid: frontmatter name "\.\." must be/);
      expect(refusal('skill://.hidden/SKILL.md')).toMatch(/skills\/list entry is invalid: frontmatter name "\.hidden" must be/);
    } else {
      expect(refusal('..')).toMatch(/the skill name "\.\." is not usable: the path must not hold "\." or "\.\." segments/);
      expect(refusal('.hidden')).toMatch(/the skill name "\.hidden" is not usable: hidden directories are not served/);
    }
  });

  test('attack: a lying digest refuses the skill, naming both digests', () => {
    expect(refusal('liar')).toMatch(
      /"SKILL.md" does not match its published digest \(published sha256:[0-9a-f]{64}, received sha256:[0-9a-f]{64}\); nothing written/,
    );
  });

  test('attack: a file over the size cap is refused from its published size, before it is read', () => {
    expect(refusal('oversized')).toMatch(/add up to more than 16777216 bytes \("huge.bin" is 17825792\)/);
    expect(readFileSync(readLog, 'utf8')).not.toMatch(/oversized\/(huge\.bin|SKILL\.md)/);
  });

  test('attack: a file bigger than its published size is refused', () => {
    expect(refusal('understated')).toMatch(/"data.bin" is 2097152 bytes; the server published 10; nothing written/);
  });

  test('attack: a read answered with another resource (a link to file:///etc/passwd) is refused', () => {
    expect(refusal('link')).toMatch(
      /"notes.txt" was answered with another resource, "file:\/\/\/etc\/passwd"; a read must return the file asked for/,
    );
  });
});

describe('attack: an HTTP server whose answer never ends', () => {
  const LIMIT_BYTES = 64 * 1024 * 1024;
  let server: Server;
  let url: string;
  let sent = 0;
  let aborted = false;

  beforeAll(async () => {
    // Answers initialize like any server, then streams resources/list without end (up to 64 MiB).
    server = createServer((req, res) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => {
        const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
        if (message.id === undefined) return void res.writeHead(202).end();
        res.writeHead(200, { 'content-type': 'application/json' });
        if (message.method === 'initialize') {
          return void res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: message.id,
              result: {
                protocolVersion: message.params?.protocolVersion,
                capabilities: { resources: {} },
                serverInfo: { name: 'endless', version: '0' },
              },
            }),
          );
        }
        res.on('close', () => {
          aborted = !res.writableFinished;
        });
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        res.write(`{"jsonrpc":"2.0","id":${message.id},"result":{"resources":[]`);
        const pump = (): void => {
          while (!res.destroyed && sent < LIMIT_BYTES) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end('}}');
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  test('pull stops reading at its message cap, says so, exits 1 and writes nothing', async () => {
    const dir = tempDir('pull-endless');
    const run = await runPull(['--to', dir, '--url', url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/could not list the skills of .*: .*over \d+ bytes; refused/s);
    expect(aborted, 'the client hung up before the answer ended').toBe(true);
    expect(sent).toBeLessThan(LIMIT_BYTES);
    expect(filesUnder(dir)).toEqual([]);
  });
});
