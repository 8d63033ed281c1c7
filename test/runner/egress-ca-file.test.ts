/**
 * `SKILL_MCP_EGRESS_CA_FILE` (what the injecting proxy verifies bound hosts against,
 * docs/secrets-proxy.md): a file that cannot be read or holds no usable certificate stops the
 * runner's start with a message naming the variable (never its path), instead of failing every
 * run with secrets later with a bare INTERNAL; a good one is parsed once per runner and used again
 * while its text is the same.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { egressCaFileProblem } from '../../runner/secrets/trust.js';
import { upstreamCaFor } from '../../runner/egress/run-egress.js';
import { upstreamContext } from '../../runner/helper/trust.js';
import { BIN, tempDir } from './harness.js';

describe('SKILL_MCP_EGRESS_CA_FILE', () => {
  const dir = tempDir('egress-ca-file');
  const missing = join(dir, 'missing.pem');
  const notPem = join(dir, 'not.pem');
  const broken = join(dir, 'broken.pem');
  const good = join(dir, 'good.pem');
  writeFileSync(notPem, 'not a certificate\n');
  writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  writeFileSync(good, `${rootCertificates[0]}\n`);

  it.each([
    ['a file that does not exist', missing, 'cannot be read (ENOENT)'],
    ['a file with no PEM certificate', notPem, 'holds no PEM certificate'],
    ['a PEM block that is no certificate', broken, 'cannot be parsed'],
  ])('%s is a problem named by the variable, not by its path', (_what, file, text) => {
    const problem = egressCaFileProblem({ SKILL_MCP_EGRESS_CA_FILE: file });
    expect(problem).toContain('SKILL_MCP_EGRESS_CA_FILE');
    expect(problem).toContain(text);
    expect(problem).not.toContain(dir);
  });

  it('unset, empty or a good file is no problem', () => {
    expect(egressCaFileProblem({})).toBeUndefined();
    expect(egressCaFileProblem({ SKILL_MCP_EGRESS_CA_FILE: '' })).toBeUndefined();
    expect(egressCaFileProblem({ SKILL_MCP_EGRESS_CA_FILE: good })).toBeUndefined();
  });

  it('the runner refuses to start on a file holding no certificate, and says which variable', () => {
    const base = tempDir('egress-ca-runner');
    const started = spawnSync(
      process.execPath,
      [BIN, 'runner', '--socket', join(base, 'r.sock'), '--state-dir', join(base, 'state'), '--scratch-dir', join(base, 'scratch')],
      {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_EGRESS_CA_FILE: notPem },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(started.status).not.toBe(0);
    expect(started.stderr).toContain('SKILL_MCP_EGRESS_CA_FILE');
    expect(started.stderr).toContain('holds no PEM certificate');
  });

  it('the file is read again for every run (a changed file is used from the next run on); the system CAs are parsed once per helper', () => {
    const env = { SKILL_MCP_EGRESS_CA_FILE: good };
    const first = upstreamCaFor(env);
    expect(first).toBe(readFileSync(good, 'utf8'));
    writeFileSync(good, `${readFileSync(good, 'utf8')}${rootCertificates[1]}\n`);
    expect(upstreamCaFor(env)).not.toBe(first);
    expect(upstreamCaFor({})).toBeUndefined();
    // In the helper: the operator's CAs as given, the system's made once (a spare makes them before its run).
    const system = upstreamContext(undefined);
    expect(upstreamContext(undefined)).toBe(system);
    expect(upstreamContext(readFileSync(good, 'utf8'))).not.toBe(system);
  });
});
