/**
 * @module The reference point: a bare v2-SDK server serving one folder through the SDK's own
 * `loadSkills`, in both eras, bundled by esbuild like our bin. It is what a server author gets
 * for free; the harness prints our/ref ratios against it.
 *
 * Over stdio by default. With `--http` (and `--port N`, 0 for any) it serves Streamable HTTP at
 * `/mcp` on 127.0.0.1 through the SDK's `createMcpHandler` (2026-07-28 per request, the 2025 era
 * stateless) behind the smallest `node:http` adapter that works: no guards, no caps, no auth. It
 * prints `listening on http://127.0.0.1:PORT/mcp` on stderr once it listens, as our front does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const root = process.env['SKILLS_DIR'];
if (!root) throw new Error('ref-server: set SKILLS_DIR');
const catalog = await loadSkills(root, { onWarning: () => undefined });
const factory = () => {
  const mcp = new McpServer({ name: 'ref-load-skills', version: '0.0.0' }, { capabilities: { resources: {} } });
  catalog.attach(mcp);
  return mcp;
};

const args = process.argv.slice(2);
if (args.includes('--http')) {
  const port = Number(args[args.indexOf('--port') + 1] ?? 0) || 0;
  const handler = createMcpHandler(factory, { legacy: 'stateless' });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => void answer(req, res));
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string' && name !== 'connection' && name !== 'keep-alive') headers.set(name, value);
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const response = await handler.fetch(new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(hasBody ? { body: Buffer.concat(chunks) } : {}) }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) res.write(part);
    res.end();
  }
  server.listen(port, '127.0.0.1', () => {
    process.stderr.write(`ref-server: listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} else {
  const handle = serveStdio(factory, { legacy: 'serve' });
  process.stdin.once('end', () => void handle.close());
}
