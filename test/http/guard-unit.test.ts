/**
 * The Host and Origin gates (server/http/guard.ts) against the SDK's own helpers: they check the
 * header values without building a probe `Request`, and must refuse exactly what the SDK's
 * `hostHeaderValidationResponse` / `originValidationResponse` refuse, with the same answer.
 */
import {
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import { describe, expect, test } from 'vitest';
import { guardRequest, type GuardOptions } from '../../server/http/guard.js';

const options: GuardOptions = {
  allowedHosts: localhostAllowedHostnames(),
  allowedOrigins: localhostAllowedOrigins(),
  otherPaths: () => false,
};

/** What the SDK's helpers answer for these headers (host first, as the guard checks). */
function sdkAnswer(headers: Headers): Response | undefined {
  const probe = new Request('http://skill-mcp.invalid/', { headers });
  return hostHeaderValidationResponse(probe, options.allowedHosts ?? []) ?? originValidationResponse(probe, options.allowedOrigins);
}

async function shape(response: Response | undefined): Promise<unknown> {
  if (response === undefined) return undefined;
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

const CASES: Array<[string, Record<string, string>]> = [
  ['DNS rebinding: a foreign Host', { host: 'evil.example' }],
  ['DNS rebinding: a foreign Host with a port', { host: 'evil.example:8080' }],
  ['a malformed Host', { host: 'a b' }],
  ['no Host at all', {}],
  ['cross-site: a foreign Origin', { host: 'localhost:3000', origin: 'https://evil.example' }],
  ['cross-site: the opaque "null" Origin of a sandboxed iframe', { host: 'localhost', origin: 'null' }],
  ['a malformed Origin', { host: 'localhost', origin: '::not a url' }],
  ['a foreign Host and a foreign Origin', { host: 'evil.example', origin: 'https://evil.example' }],
  ['loopback, no Origin (a non-browser client)', { host: '127.0.0.1:8080' }],
  ['loopback with a localhost Origin', { host: 'localhost:8080', origin: 'http://localhost:5173' }],
  ['IPv6 loopback', { host: '[::1]:8080', origin: 'http://[::1]:5173' }],
];

describe('Host and Origin gates answer as the SDK helpers do', () => {
  test.each(CASES)('%s', async (_name, values) => {
    const headers = new Headers(values);
    expect(await shape(guardRequest('/mcp', headers, options))).toEqual(await shape(sdkAnswer(headers)));
  });

  test('the attack cases are refused with 403 and the allowed ones pass', () => {
    const statuses = CASES.map(([, values]) => guardRequest('/mcp', new Headers(values), options)?.status);
    expect(statuses).toEqual([403, 403, 403, 403, 403, 403, 403, 403, undefined, undefined, undefined]);
  });

  test('without a Host allow-list only the Origin is checked', () => {
    const open = { ...options, allowedHosts: undefined };
    expect(guardRequest('/mcp', new Headers({ host: 'evil.example' }), open)).toBeUndefined();
    expect(guardRequest('/mcp', new Headers({ host: 'evil.example', origin: 'https://evil.example' }), open)?.status).toBe(403);
  });
});
