/**
 * @module The "fetcher" skill the client-side egress tests run (skill-run-egress.test.ts and
 * skill-run-egress-prompt.test.ts): a python3 (urllib) and a node script that fetch a URL through
 * the run's proxy, declared with two destinations on this machine's loopback — a test HTTP server
 * that records the paths it was asked for, and the port after it (never listened on).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { expectNoLeftovers, tempDir } from './harness.js';

const FETCH_PY = `import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode()}))
except Exception as e:
    print(json.dumps({"error": str(e)}))
`;
// Node 20's http and fetch ignore HTTP_PROXY: the script sends its request to the proxy itself.
const FETCH_JS = `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const target = new URL(process.argv[2]);
http.get({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { Host: target.host } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
}).on('error', (e) => console.log(JSON.stringify({ error: e.message })));
`;

function writeSkill(dir: string, egress: string[]): void {
  const files = {
    'SKILL.md': `---\nname: fetcher\ndescription: Fetches a page for the egress tests.\nmcp-host:\n  version: 1\n  run:\n    - script: fetch.py\n      interpreter: python3\n      timeout: 30\n    - script: fetch.js\n      interpreter: node\n      timeout: 30\n  egress: [${egress.join(', ')}]\n---\nFetch things.\n`,
    'fetch.py': FETCH_PY,
    'fetch.js': FETCH_JS,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, 'fetcher', path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(dir, 'fetcher', path), text, { mode: 0o644 });
  }
}

/** The skill's folder and its server. */
export interface FetcherSkill {
  root(): string;
  port(): number;
  otherPort(): number;
  /** The paths the server was asked for, in order. */
  hits: string[];
}

/** The skill and its server, made before the calling file's tests and gone after them (with a check that nothing was left running). */
export function fetcherSkill(): FetcherSkill {
  let server: Server;
  let port = 0;
  let otherPort = 0;
  const hits: string[] = [];
  let root: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end(`hello ${req.url}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    // A second declared destination (never listened on) for the narrowing test.
    otherPort = port === 65535 ? port - 1 : port + 1;
    root = tempDir('egress-skills');
    writeSkill(root, [`127.0.0.1:${port}`, `127.0.0.1:${otherPort}`]);
  });
  afterAll(async () => {
    server?.close();
    await expectNoLeftovers();
  });
  return { root: () => root, port: () => port, otherPort: () => otherPort, hits };
}
