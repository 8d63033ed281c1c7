/**
 * A run with a secret binding, spawned for real the way the run path spawns it (buildSpawn on
 * this machine's probed platform, bubblewrap, the in-sandbox bridge, the run's proxy with its
 * bundle), without the declaration side (runner/requests/derive.ts fills `plan.secrets` once the
 * secrets declaration lands; here the plan is written by hand). Stops: the value reaching the
 * sandbox (environment, /proc/self/environ, the bundle, any file it can read), the bundle being
 * writable or replaceable from inside, and the injection not working through a real sandbox.
 * Network: loopback only. Skips, saying why, where bubblewrap cannot build a sandbox.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../runner/audit/log.js';
import { planEgress } from '../../runner/egress/plan.js';
import { openRunProxy } from '../../runner/helper/run-proxy.js';
import type { RunPlan } from '../../runner/requests/derive.js';
import { probePlatform, usesBwrap } from '../../runner/sandbox/platform.js';
import { loadHostPrograms } from '../../runner/sandbox/seccomp-programs.js';
import type { Platform } from '../../runner/sandbox/platform.js';
import { runProcess } from '../../runner/sandbox/process.js';
import { buildSpawn } from '../../runner/sandbox/spawn.js';
import { CA_BUNDLE_MOUNT } from '../../runner/secrets/trust.js';
import { EGRESS_SOCKET_MOUNT, RUN_HELPER_MOUNT } from '../../runner/egress/bridge.js';
import { HELPER_BUNDLE_NAME, HELPER_SOCKET_NAME } from '../../runner/egress/helper-protocol.js';
import { makeTestCerts, startHttpsApi, type HttpsApi, type TestCerts } from '../https-api.js';

const VALUE = 'ghp_REALVALUE_never_in_the_sandbox_7Qx';
const PLACEHOLDER = 'skmcp_ph_GH_TOKEN_0f1e2d3c4b5a6978';
const MiB = 1024 * 1024;

const SCRIPT = `
import os, sys, urllib.request
# The needles come hex-encoded in argv, so this file itself holds neither.
value = bytes.fromhex(sys.argv[2])
key = bytes.fromhex(sys.argv[3])
found = []
for root in ["/run", "/tmp", "/work", "/skill"]:
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                data = open(p, "rb").read()
            except OSError:
                continue
            if value in data: found.append(p)
            if key in data: found.append("key:" + p)
environ = open("/proc/self/environ", "rb").read()
print("value-in-environ", value in environ)
print("found", found)
print("bundle-var", os.environ.get("SSL_CERT_FILE"))
try:
    open(os.environ["SSL_CERT_FILE"], "a").write("x")
    print("bundle-writable True")
except OSError as e:
    print("bundle-writable False", e.errno)
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "token " + os.environ["GH_TOKEN"]})
with urllib.request.urlopen(req) as r:
    print("status", r.status, r.read().decode())
`;

let dir: string;
let platform: Platform | undefined;
let skip: string | undefined;
let certs: TestCerts;
let api: HttpsApi;
let port: number;
/** As root, a run uid of its own (as namespace-uid gives each run); outside the runner's pool range, so no other test's run shares it. */
const RUN_UID = 40231;
const asRoot = process.getuid?.() === 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-secsbx-'));
  // A run uid must reach its run folder inside.
  chmodSync(dir, 0o711);
  const probed = probePlatform({
    searchPath: process.env['PATH'],
    bwrapSetting: undefined,
    probeUid: undefined,
    tmpBytes: 64 * MiB,
    programs: loadHostPrograms(join(import.meta.dirname, '../../dist/seccomp')),
  });
  if (!usesBwrap(probed)) skip = `bubblewrap cannot build a sandbox here (${probed.isolation}: ${probed.missing.join('; ')})`;
  else if (!probed.interpreters.get('node') || !probed.interpreters.get('python3')) skip = 'no node or python3 the sandbox can run';
  else platform = probed;
  certs = makeTestCerts(dir, 'test CA');
  api = await startHttpsApi(certs, () => 'ok');
  port = api.port;
});

afterAll(() => {
  api?.close();
  rmSync(dir, { recursive: true, force: true });
});

const variants: [string, number | undefined][] = [
  ["the runner's own uid", undefined],
  ...(asRoot ? [[`a run uid of its own (${RUN_UID}, root runner)`, RUN_UID] as [string, number]] : []),
];

describe.each(variants)('a run with a secret binding, in bubblewrap, as %s', (_label, uid) => {
  it('gets the value injected on the way out, and nothing inside the sandbox holds it or the CA key', async (ctx) => {
    if (skip !== undefined) {
      console.warn(`skipped: ${skip}`);
      ctx.skip();
    }
    const p = platform!;
    const scratch = join(dir, `run-${uid ?? 'own'}`);
    mkdirSync(scratch, { mode: 0o700 });
    const skillDir = join(scratch, 'skill');
    const work = join(scratch, 'work');
    mkdirSync(skillDir, { mode: 0o755 });
    mkdirSync(work);
    writeFileSync(join(skillDir, 'probe.py'), SCRIPT, { mode: 0o644 });
    if (uid !== undefined) {
      chownSync(scratch, uid, uid);
      chownSync(work, uid, uid);
    }
    const before = api.received.length;
    const entry = `127.0.0.1:${port}`;
    const egress = planEgress(p.isolation, true, true, [entry]);
    const binding = {
      name: 'GH_TOKEN',
      hosts: [entry],
      header: 'Authorization',
      format: 'token {value}',
      placeholder: PLACEHOLDER,
      value: VALUE,
    };
    const plan = {
      willRun: {
        skill: 's',
        interpreter: 'python3',
        argv: ['probe.py'],
        cwd: 's',
        timeoutMs: 30_000,
        envNames: [],
        isolation: p.isolation,
        sandbox: p.mechanisms,
        memoryBytes: 1024 * MiB,
        content: { script: '', files: '', fileCount: 1, bytes: 1 },
      },
      interpreterPath: (p.interpreters.get('python3') as { path: string }).path,
      realDir: skillDir,
      scriptRelative: 'probe.py',
      args: [`https://${entry}/user`, Buffer.from(VALUE).toString('hex'), Buffer.from('PRIVATE KEY').toString('hex')],
      grantedEnv: [],
      egress,
      deps: {},
      secrets: [binding],
      redact: [],
    } as unknown as RunPlan;
    const audit = new AuditLog({ path: join(dir, `audit-${uid ?? 'own'}.log`), anchorPath: join(dir, `audit-${uid ?? 'own'}.head`) });
    audit.begin(() => ({ event: 'runner.start' }));
    // The helper's proxy (runner/helper/run-proxy.ts), here in the test's process; its records written as the runner writes them.
    const proxy = await openRunProxy({
      socketPath: join(scratch, HELPER_SOCKET_NAME),
      entries: egress.entries,
      onRecord: (record) => void audit.append({ event: 'egress', run_id: 'r1', ...record }),
      secrets: [binding],
      intercept: { bundlePath: join(scratch, HELPER_BUNDLE_NAME), timeoutMs: 30_000, upstreamCa: readFileSync(certs.ca, 'utf8') },
    });
    // A helper's folder lets the run's uid in (runner/egress/helper-link.ts); here the socket is given to it.
    if (uid !== undefined) chownSync(join(scratch, HELPER_SOCKET_NAME), uid, uid);
    const limits = {
      nproc: 256,
      fsizeBytes: 64 * MiB,
      nofile: 256,
      memoryBytes: 1024 * MiB,
      tmpBytes: 64 * MiB,
      workspaceBytes: 64 * MiB,
      workspaceFiles: 1000,
      inputBytes: MiB,
      outputFilesBytes: MiB,
    };
    // The placeholder is what the declaration side will put in the script's variable; here it is added to the built env by hand.
    const spec = buildSpawn({
      plan,
      platform: p,
      sourceEnv: { PATH: process.env['PATH'] },
      uid,
      limits,
      dirs: { workspace: work, home: scratch, helper: scratch },
    });
    expect(spec.envNames).toEqual(
      expect.arrayContaining(['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'CURL_CA_BUNDLE']),
    );
    // The helper's folder is bound whole (its bundle and socket may be made after the bind): the bundle is seen at CA_BUNDLE_MOUNT.
    expect(spec.args).toEqual(expect.arrayContaining(['--ro-bind', scratch, RUN_HELPER_MOUNT]));
    // …under the names the helper makes them with in its folder (runner/helper/main.ts).
    expect(CA_BUNDLE_MOUNT).toBe(`${RUN_HELPER_MOUNT}/${HELPER_BUNDLE_NAME}`);
    expect(EGRESS_SOCKET_MOUNT).toBe(`${RUN_HELPER_MOUNT}/${HELPER_SOCKET_NAME}`);
    // The bridge (a node) starts without NODE_EXTRA_CA_CERTS, which would cost its start a read of
    // the bundle, and hands it to the script (runner/egress/bridge.ts); the script's names still hold it.
    expect(spec.env['NODE_EXTRA_CA_CERTS']).toBeUndefined();
    expect(spec.envNames).toContain('NODE_EXTRA_CA_CERTS');
    expect(spec.args.slice(spec.args.indexOf(EGRESS_SOCKET_MOUNT), spec.args.indexOf(EGRESS_SOCKET_MOUNT) + 2)).toEqual([
      EGRESS_SOCKET_MOUNT,
      CA_BUNDLE_MOUNT,
    ]);
    const withPlaceholder = addToEnv(spec, 'GH_TOKEN', PLACEHOLDER);
    const proc = runProcess(withPlaceholder, {
      timeoutMs: 30_000,
      killGraceMs: 0,
      drainMs: 1000,
      maxStreamBytes: MiB,
      afterExit: async () => {},
    });
    const outcome = await proc.outcome;
    await proxy.close();
    await audit.close();
    const stdout = Buffer.from(outcome.stdout).toString();
    expect({ code: outcome.exitCode, stderr: Buffer.from(outcome.stderr).toString() }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('value-in-environ False');
    expect(stdout).toContain('found []');
    expect(stdout).toContain(`bundle-var ${CA_BUNDLE_MOUNT}`);
    expect(stdout).toMatch(/bundle-writable False (30|13)/);
    expect(stdout).toContain('status 200 ok');
    expect(stdout).not.toContain(VALUE);
    expect(api.received.slice(before)).toEqual([`token ${VALUE}`]);
    const line = readFileSync(join(dir, `audit-${uid ?? 'own'}.log`), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"egress"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(line).toEqual([expect.objectContaining({ destination: entry, intercepted: true, injected: { GH_TOKEN: 1 } })]);
  });
});

/** The spec with one more variable for the script (in the launcher's orders when there is a launcher, else in its env). */
function addToEnv(spec: ReturnType<typeof buildSpawn>, name: string, value: string): ReturnType<typeof buildSpawn> {
  const orders = spec.fds[0];
  if (orders === undefined) return { ...spec, env: { ...spec.env, [name]: value } };
  const parsed = JSON.parse(orders.toString()) as { env: string[] };
  parsed.env.push(`${name}=${value}`);
  return { ...spec, fds: [Buffer.from(JSON.stringify(parsed)), ...spec.fds.slice(1)] };
}
