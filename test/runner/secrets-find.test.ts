/**
 * The pure pieces of the injecting proxy: the stream scanner and replacer (runner/egress/find.ts)
 * against a placeholder or value split across chunks however the stream breaks; the bundle's
 * variables and what a skill can never set (shared/declaration.ts); the trust sources
 * (runner/secrets/trust.ts) with a clear error for a bad SKILL_MCP_EGRESS_CA_FILE.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isNeverGrantable } from '../../shared/declaration.js';
import { makeReplacer, makeScanner } from '../../runner/helper/find.js';
import { CA_BUNDLE_MOUNT, CA_BUNDLE_VARIABLES, caBundleEnv, upstreamCaPem } from '../../runner/secrets/trust.js';
import { systemCaPem } from '../../runner/helper/trust.js';
import { writeCaBundle } from '../../runner/helper/trust.js';

const PH = 'skmcp_ph_TOKEN_0123456789abcdef';

/** Every way to cut `text` into two or three chunks. */
function* cuts(text: string): Generator<Buffer[]> {
  const b = Buffer.from(text);
  for (let i = 0; i <= b.length; i += 1) {
    yield [b.subarray(0, i), b.subarray(i)];
    for (let j = i; j <= b.length; j += 7) yield [b.subarray(0, i), b.subarray(i, j), b.subarray(j)];
  }
}

describe('the stream scanner', () => {
  it('finds a placeholder split across chunks at every possible place, once', () => {
    const text = `aa${PH}bb${PH}`;
    for (const chunks of cuts(text)) {
      const scanner = makeScanner([{ name: 'TOKEN', bytes: Buffer.from(PH) }]);
      for (const chunk of chunks) scanner.push(chunk);
      expect(scanner.counts.get('TOKEN')).toBe(2);
    }
  });

  it('counts nothing in a body without the placeholder, and a near miss is not a match', () => {
    const scanner = makeScanner([{ name: 'TOKEN', bytes: Buffer.from(PH) }]);
    scanner.push(Buffer.from(PH.slice(0, -1)));
    scanner.push(Buffer.from('x'));
    expect(scanner.counts.size).toBe(0);
  });

  it('keeps each needle apart, a short one never counted twice from the kept tail', () => {
    const scanner = makeScanner([
      { name: 'LONG', bytes: Buffer.from(PH) },
      { name: 'SHORT', bytes: Buffer.from('qq') },
    ]);
    for (const c of ['xqq', 'y', 'z', `${PH}qq`]) scanner.push(Buffer.from(c));
    expect(Object.fromEntries(scanner.counts)).toEqual({ LONG: 1, SHORT: 2 });
  });
});

describe('the stream replacer', () => {
  it('swaps a value echoed across chunk boundaries back to the placeholder, wherever the stream breaks', () => {
    const value = 'sk-REAL-value';
    const text = `{"token":"${value}","again":"${value}"}`;
    for (const chunks of cuts(text)) {
      const r = makeReplacer([{ name: 'T', bytes: Buffer.from(value), to: Buffer.from(PH) }]);
      const out = Buffer.concat([...chunks.map((c) => r.push(c)), r.end()]).toString();
      expect(out).toBe(`{"token":"${PH}","again":"${PH}"}`);
      expect(r.counts.get('T')).toBe(2);
    }
  });

  it('passes a body without the value through byte for byte', () => {
    const r = makeReplacer([{ name: 'T', bytes: Buffer.from('secret'), to: Buffer.from(PH) }]);
    const out = Buffer.concat([r.push(Buffer.from('secre')), r.push(Buffer.from('tive? no: secrex')), r.end()]);
    expect(out.toString()).toBe('secretive? no: secrex'.replace('secret', PH));
  });
});

describe("the run's trust", () => {
  it('the bundle variables name the bundle inside the sandbox, only for a run with bindings', () => {
    expect(caBundleEnv(false)).toEqual({});
    expect(caBundleEnv(true)).toEqual(Object.fromEntries(CA_BUNDLE_VARIABLES.map((n) => [n, CA_BUNDLE_MOUNT])));
  });

  it.each([...CA_BUNDLE_VARIABLES, 'SSL_CERT_DIR'])('a skill can never be granted %s (it would choose what the run trusts)', (name) => {
    expect(isNeverGrantable(name)).toBe(true);
  });

  it("the system CAs come from the distro bundle when there is one, else from Node's own list", () => {
    expect(
      systemCaPem((path) =>
        path === '/etc/pki/tls/certs/ca-bundle.crt'
          ? '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----'
          : (() => {
              throw new Error('ENOENT');
            })(),
      ),
    ).toBe('-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n');
    expect(
      systemCaPem(() => {
        throw new Error('ENOENT');
      }),
    ).toBe(`${rootCertificates.join('\n')}\n`);
  });

  it("the bundle is readable by the run's own uid under the runner's umask (077), holds the system CAs then the run CA, and is never overwritten", () => {
    const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-trust-'));
    const old = process.umask(0o077);
    try {
      const path = writeCaBundle(join(dir, 'ca-bundle.pem'), 'RUN CA\n', 'SYSTEM CAS\n');
      expect(statSync(path).mode & 0o777).toBe(0o644);
      expect(readFileSync(path, 'utf8')).toBe('SYSTEM CAS\nRUN CA\n');
      // Security: a file already there (planted, or a second call) is an error, not replaced.
      expect(() => writeCaBundle(path, 'OTHER\n', 'X\n')).toThrow(/EEXIST/);
    } finally {
      process.umask(old);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a SKILL_MCP_EGRESS_CA_FILE that cannot be read, or holds no certificate, is a clear error, never a silent fallback', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-trust-'));
    try {
      expect(() => upstreamCaPem({ SKILL_MCP_EGRESS_CA_FILE: join(dir, 'missing.pem') })).toThrow(
        /SKILL_MCP_EGRESS_CA_FILE cannot be read \(ENOENT\)/,
      );
      writeFileSync(join(dir, 'empty.pem'), 'not a cert');
      expect(() => upstreamCaPem({ SKILL_MCP_EGRESS_CA_FILE: join(dir, 'empty.pem') })).toThrow(/holds no PEM certificate/);
      expect(upstreamCaPem({})).toBeUndefined();
      expect(systemCaPem()).toContain('-----BEGIN CERTIFICATE-----');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
