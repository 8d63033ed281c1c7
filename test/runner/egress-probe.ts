/**
 * @module What the declared-egress runner tests share (test/runner/egress.test.ts, the proxy's
 * traffic; egress-isolation.test.ts, what a run with and without egress sees and reaches around the
 * proxy; egress-without-bwrap.test.ts, egress at the levels without bubblewrap): the probe scripts a
 * run uses to reach out, and a loopback HTTP server that records what reached it.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';

export const probe = {
  // urllib honours HTTP_PROXY; an HTTP error's body is the proxy's explanation.
  'fetch.py': `import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode()}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
`,
  // A CONNECT tunnel to host:port through HTTPS_PROXY (what HTTPS clients do), plain HTTP inside.
  'tunnel.py': `import json, os, sys, http.client, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
c = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
c.set_tunnel(sys.argv[1], int(sys.argv[2]))
try:
    c.request("GET", "/tunnel"); r = c.getresponse()
    print(json.dumps({"status": r.status, "body": r.read().decode()}))
except OSError as e:
    print(json.dumps({"error": str(e)}))
`,
  'curl.py': `import subprocess, sys
r = subprocess.run(["curl", "-sS", "--max-time", "10", sys.argv[1]], capture_output=True, text=True)
print(r.returncode, r.stdout.strip() or r.stderr.strip())
`,
  // Around the proxy: a raw TCP connection to the server's own address and port.
  'raw.py': `import socket, sys
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("connected")
except Exception as e: print(type(e).__name__)
`,
  'env.py': `import json, os
print(json.dumps(dict(os.environ)))
`,
  // Node 20's http ignores HTTP_PROXY: a node script sends its request to the proxy itself.
  'fetch.js': `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const target = new URL(process.argv[2]);
const req = http.request({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { Host: target.host } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
});
req.on('error', (e) => console.log(JSON.stringify({ error: e.message })));
req.end();
`,
};
export const scripts = Object.keys(probe).map((script) => ({
  script,
  interpreter: script.endsWith('.js') ? 'node' : 'python3',
  timeout: 30,
}));

export interface Served {
  server: Server;
  port: number;
  hits: string[];
}

/** An HTTP server on this machine's loopback that answers with its name and the path asked for. */
export async function serveOnLoopback(name: string): Promise<Served> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name} ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, hits };
}
