/**
 * @module The metrics endpoint: its own HTTP server on `--metrics-port` (loopback unless
 * `--metrics-host` says otherwise), answering `GET /metrics` and nothing else. It shares nothing
 * with the MCP port: no bearer token is needed to scrape, and the MCP port never serves metrics.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpMetrics } from './metrics.js';

export interface MetricsEndpoint {
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(metrics: HttpMetrics, host: string, port: number): Promise<MetricsEndpoint> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://metrics.invalid').pathname;
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n'),
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
