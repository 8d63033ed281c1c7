/**
 * A local HTTPS API for the secrets tests: a throwaway test CA made with openssl, a certificate for
 * 127.0.0.1 signed by it, and a server on loopback that records each Authorization header it gets.
 * The runner is given the CA as `SKILL_MCP_EGRESS_CA_FILE` so its proxy trusts the API upstream.
 * Network: loopback only.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** Runs openssl in `dir`, failing the set-up with its stderr if it fails. */
export function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** Where the test CA's certificate and the API's key and certificate are. */
export interface TestCerts {
  /** The CA certificate (readable by all: a runner as an ordinary uid reads it). */
  ca: string;
  /** The API's private key and its certificate for IP 127.0.0.1, signed by the CA. */
  key: string;
  cert: string;
}

/**
 * A P-256 test CA (`<caFile>.pem`, `<caFile>.key`) named `caName`, and `api.pem`/`api.key` for
 * 127.0.0.1 signed by it (a server certificate: not a CA, server auth only), all in `dir`, valid a day.
 */
export function makeTestCerts(dir: string, caName: string, caFile = 'ca'): TestCerts {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    `${caFile}.key`,
    '-out',
    `${caFile}.pem`,
    '-subj',
    `/CN=${caName}`,
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  openssl(dir, ['req', ...ec, '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=api']);
  writeFileSync(
    join(dir, 'api.ext'),
    'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'api.csr',
    '-CA',
    `${caFile}.pem`,
    '-CAkey',
    `${caFile}.key`,
    '-CAcreateserial',
    '-out',
    'api.pem',
    '-days',
    '1',
    '-extfile',
    'api.ext',
  ]);
  const ca = join(dir, `${caFile}.pem`);
  chmodSync(ca, 0o644);
  return { ca, key: join(dir, 'api.key'), cert: join(dir, 'api.pem') };
}

/** A running HTTPS API on 127.0.0.1. */
export interface HttpsApi {
  port: number;
  /** Every Authorization header the API received, in order (`undefined` as the string "undefined"). */
  received: string[];
  close(): void;
}

/**
 * Serves `certs` on 127.0.0.1 (a free port). Each request's Authorization header is recorded, and
 * the answer is `answer(header)`: an object as JSON, a string as plain text.
 */
export async function startHttpsApi(certs: TestCerts, answer: (authorization: string | undefined) => object | string): Promise<HttpsApi> {
  const received: string[] = [];
  const server = createServer({ key: readFileSync(certs.key), cert: readFileSync(certs.cert) }, (req, res) => {
    received.push(String(req.headers.authorization));
    const body = answer(req.headers.authorization);
    if (typeof body === 'string') {
      res.end(body);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, received, close: () => void server.close() };
}

/**
 * Writes the skill `keyed` in `dir/skills` (folders 0755, files 0644, so a runner as another uid
 * reads them): each script run by its interpreter, egress to the API on `port` alone, and API_TOKEN
 * bound to it, sent as `Authorization: Bearer {value}`. Returns the skills folder.
 */
export function writeKeyedSkill(dir: string, port: number, scripts: Record<string, { text: string; interpreter: string }>): string {
  const skills = join(dir, 'skills');
  const skill = join(skills, 'keyed');
  mkdirSync(skill, { recursive: true, mode: 0o755 });
  chmodSync(skills, 0o755);
  writeFileSync(join(skill, 'SKILL.md'), '---\nname: keyed\ndescription: Calls an API with a key it never holds.\n---\nCall the API.\n', {
    mode: 0o644,
  });
  for (const [name, { text }] of Object.entries(scripts)) writeFileSync(join(skill, name), text, { mode: 0o644 });
  const rows = Object.entries(scripts)
    .map(([name, { interpreter }]) => `  - script: ${name}\n    interpreter: ${interpreter}\n    timeout: 60\n`)
    .join('');
  writeFileSync(
    join(skill, 'mcp-host.yaml'),
    `version: 1\nrun:\n${rows}egress: [127.0.0.1:${port}]\nsecrets:\n  - name: API_TOKEN\n    hosts: [127.0.0.1:${port}]\n    header: Authorization\n    format: "Bearer {value}"\n`,
    { mode: 0o644 },
  );
  return skills;
}
