/**
 * The HTTP front's settings: safe defaults (loopback, no wildcard Host), flags over variables, and
 * a refusal, never a silent default, for a setting that would weaken a guard.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readHttpOptions } from '../../server/http/options.js';

describe('readHttpOptions', () => {
  test('defaults: 127.0.0.1:3000, localhost Host names only, no token', () => {
    const options = readHttpOptions([], {});
    expect(options).toMatchObject({ host: '127.0.0.1', port: 3000, token: undefined, allowedHosts: ['localhost', '127.0.0.1', '[::1]'] });
  });

  test('--host/--port win over SKILL_MCP_HTTP_HOST/PORT', () => {
    const options = readHttpOptions(['--host', '127.0.0.2', '--port', '0'], { SKILL_MCP_HTTP_HOST: '127.0.0.3', SKILL_MCP_HTTP_PORT: '9' });
    expect(options).toMatchObject({ host: '127.0.0.2', port: 0 });
    expect(options.allowedHosts).toContain('127.0.0.2');
  });

  test('an IPv6 bind address is allowed as a bracketed Host', () => {
    expect(readHttpOptions(['--host', '::1'], {}).allowedHosts).toContain('[::1]');
  });

  test('binding every address without SKILL_MCP_HTTP_ALLOWED_HOSTS is refused (DNS rebinding would be open)', () => {
    expect(() => readHttpOptions(['--host', '0.0.0.0'], {})).toThrow(/SKILL_MCP_HTTP_ALLOWED_HOSTS/);
    expect(() => readHttpOptions(['--host', '::'], {})).toThrow(/SKILL_MCP_HTTP_ALLOWED_HOSTS/);
    expect(readHttpOptions(['--host', '0.0.0.0'], { SKILL_MCP_HTTP_ALLOWED_HOSTS: 'Skills.Example.com' }).allowedHosts).toContain(
      'skills.example.com',
    );
    expect(readHttpOptions(['--host', '0.0.0.0'], { SKILL_MCP_HTTP_ALLOWED_HOSTS: '*' }).allowedHosts).toBeUndefined();
  });

  test('slow-client settings: header deadline 10 s by default (at most 30 s), per-address cap off, no trusted proxy; proxies are IP literals only', () => {
    const defaults = readHttpOptions([], {});
    expect(defaults.headersTimeoutMs).toBeLessThanOrEqual(30_000);
    expect(defaults).toMatchObject({ headersTimeoutMs: 10_000, maxConnectionsPerAddress: 0, trustedProxies: [] });
    expect(
      readHttpOptions([], {
        SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '8',
        SKILL_MCP_HTTP_TRUSTED_PROXIES: '10.0.0.1, ::ffff:10.0.0.2,FD00::1',
      }),
    ).toMatchObject({
      maxConnectionsPerAddress: 8,
      trustedProxies: ['10.0.0.1', '10.0.0.2', 'fd00::1'],
    });
    expect(() => readHttpOptions([], { SKILL_MCP_HTTP_TRUSTED_PROXIES: 'proxy.internal' })).toThrow(
      /SKILL_MCP_HTTP_TRUSTED_PROXIES: "proxy.internal" is not an IP address/,
    );
    expect(() => readHttpOptions([], { SKILL_MCP_HTTP_TRUSTED_PROXIES: '10.0.0.0/8' })).toThrow(/no names, no ranges/);
    expect(() => readHttpOptions([], { SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '-1' })).toThrow(
      /SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS/,
    );
  });

  test('extra Origin hostnames add to the localhost ones', () => {
    expect(readHttpOptions([], { SKILL_MCP_HTTP_ALLOWED_ORIGINS: 'app.example.com' }).allowedOrigins).toEqual([
      'localhost',
      '127.0.0.1',
      '[::1]',
      'app.example.com',
    ]);
  });

  test('unknown flags, bad ports and bad numbers are refused, naming the setting', () => {
    expect(() => readHttpOptions(['--hots', 'x'], {})).toThrow(/--hots/);
    expect(() => readHttpOptions(['--port'], {})).toThrow(/--port/);
    expect(() => readHttpOptions(['--port', '70000'], {})).toThrow(/--port/);
    expect(() => readHttpOptions([], { SKILL_MCP_HTTP_MAX_BODY_BYTES: '1e9x' })).toThrow(/SKILL_MCP_HTTP_MAX_BODY_BYTES/);
    expect(() => readHttpOptions([], { SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: '60000', SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: '1000' })).toThrow(
      /HEADERS_TIMEOUT/,
    );
  });

  test('token: from the variable or the file, never both; short or blank tokens refused; the message never holds the token', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-http-options-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, 'from-file-0123456789abcdef\n');
      expect(readHttpOptions([], { SKILL_MCP_HTTP_TOKEN_FILE: file }).token).toBe('from-file-0123456789abcdef');
      expect(readHttpOptions([], { SKILL_MCP_HTTP_TOKEN: 'inline-0123456789abcdef' }).token).toBe('inline-0123456789abcdef');
      expect(readHttpOptions([], { SKILL_MCP_HTTP_TOKEN: '' }).token).toBeUndefined();
      expect(() => readHttpOptions([], { SKILL_MCP_HTTP_TOKEN: 'inline-0123456789abcdef', SKILL_MCP_HTTP_TOKEN_FILE: file })).toThrow(
        /set one/,
      );
      for (const bad of ['short', 'has a space 0123456789abcdef']) {
        try {
          readHttpOptions([], { SKILL_MCP_HTTP_TOKEN: bad });
          throw new Error('accepted');
        } catch (error) {
          expect((error as Error).message).toMatch(/at least 16 characters/);
          expect((error as Error).message).not.toContain(bad);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
