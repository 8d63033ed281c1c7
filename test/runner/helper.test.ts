/**
 * A run's network helper (docs/architecture.md §8, "The run's helper"), attacked through the real
 * runner on its socket, as an ordinary uid (level `namespace`) and as root (`namespace-uid`):
 *
 * - the process that reaches a declared API is not the runner: as root it runs as neither root nor
 *   the run's uid, as an ordinary user it sits in user and pid namespaces of its own; it has no
 *   capabilities, no_new_privs and the syscall filter, and it is gone once its run has answered;
 * - a script cannot signal or read its helper, even knowing its pid;
 * - a script that sends its proxy malformed requests, oversized headers and TLS garbage ends only
 *   its own connections: the runner stays up, the next run works, each attempt is audited;
 * - a helper that dies while its script runs ends only that run (`helper-failed`, said in the result
 *   and on the run's exit line); the runner serves the next run;
 * - a helper holds no other run's secret (its memory read as root while it serves its run);
 * - a run's walker is never given a bound secret's value: a run with a helper has its returns
 *   redacted by that helper (the walker's orders recorded as root).
 *
 * Network: only this machine's loopback (test servers on 127.0.0.1 that the test starts).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { auditLines, isRoot, prepareAndRun, REPO, startRunner, tempDir, text, uidRange, until, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

/** What /proc says of the process at the other end of a connection to a test server. */
interface Peer {
  pid: number;
  uid: number;
  userNs: string;
  pidNs: string;
  noNewPrivs: string;
  capEff: string;
  seccomp: string;
  cmdline: string;
}

const hex = (port: number): string => port.toString(16).toUpperCase().padStart(4, '0');

/** The process holding the client end of a loopback connection from `clientPort` to `serverPort` (/proc/net/tcp, then every fd). */
function peerOf(clientPort: number, serverPort: number): Peer | undefined {
  const rows = readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1);
  const row = rows
    .map((r) => r.trim().split(/\s+/))
    .find((f) => f[1] === `0100007F:${hex(clientPort)}` && f[2] === `0100007F:${hex(serverPort)}`);
  if (!row) return undefined;
  const inode = row[9]!;
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (link !== `socket:[${inode}]`) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const field = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
      return {
        pid: Number(pid),
        uid: Number(field('Uid').split(/\s+/)[0]),
        userNs: readlinkSync(`/proc/${pid}/ns/user`),
        pidNs: readlinkSync(`/proc/${pid}/ns/pid`),
        noNewPrivs: field('NoNewPrivs'),
        capEff: field('CapEff'),
        seccomp: field('Seccomp'),
        cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '),
      };
    }
  }
  return undefined;
}

/** Whether `needle`'s bytes are anywhere in the readable memory of `pid` (root reads any process's). */
function memoryHolds(pid: number, needle: string): boolean {
  const wanted = Buffer.from(needle, 'latin1');
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  try {
    for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.includes('[vvar]') || line.includes('[vsyscall]')) continue;
      const start = Number.parseInt(m[1]!, 16);
      const end = Number.parseInt(m[2]!, 16);
      for (let at = start; at < end; at += 16 * 1024 * 1024) {
        const size = Math.min(16 * 1024 * 1024 + wanted.length, end - at);
        const buf = Buffer.alloc(size);
        let n = 0;
        try {
          n = readSync(fd, buf, 0, size, at);
        } catch {
          break;
        }
        if (buf.subarray(0, n).includes(wanted)) return true;
      }
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

const probe = {
  // urllib honours HTTP_PROXY; an HTTP error's body is the proxy's explanation.
  'fetch.py': `import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode()}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__}))
`,
  // Tries to kill and read a host pid (its helper's), then fetches through the proxy.
  'touch.py': `import json, os, sys, urllib.request
pid = int(sys.argv[1]); seen = {}
try:
    os.kill(pid, 9); seen["kill"] = "done"
except Exception as e: seen["kill"] = type(e).__name__
try:
    open("/proc/%d/environ" % pid, "rb").read(); seen["environ"] = "read"
except Exception as e: seen["environ"] = type(e).__name__
with urllib.request.urlopen(sys.argv[2], timeout=30) as r: seen["fetch"] = r.status
print(json.dumps(seen))
`,
  // What a hostile script sends its proxy (the bridge at 127.0.0.1:3128): garbage, a 200 kB header, TLS bytes to a CONNECT.
  'garbage.py': `import json, socket, ssl
def send(data, read=True):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    try:
        s.sendall(data); return s.recv(200).decode("latin1").split("\\r\\n")[0] if read else ""
    except Exception as e: return type(e).__name__
    finally: s.close()
out = {}
out["garbage"] = send(b"\\x16\\x03\\x01\\x02\\x00" + bytes(range(256)) * 40 + b"\\r\\n\\r\\n")
out["huge_header"] = send(b"GET http://example.invalid/ HTTP/1.1\\r\\nHost: example.invalid\\r\\nX-Big: " + b"a" * 200000 + b"\\r\\n\\r\\n")
out["no_host"] = send(b"CONNECT :::: HTTP/1.1\\r\\n\\r\\n")
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT 127.0.0.1:1 HTTP/1.1\\r\\nHost: 127.0.0.1:1\\r\\n\\r\\n")
out["connect_refused"] = s.recv(200).decode("latin1").split("\\r\\n")[0]
try:
    s.sendall(b"\\x16\\x03\\x01" + b"\\xff" * 5000); out["after"] = s.recv(100).decode("latin1")
except Exception as e: out["after"] = type(e).__name__
print(json.dumps(out))
`,
};
const scripts = Object.keys(probe).map((script) => ({ script, interpreter: 'python3', timeout: 40 }));

interface Api {
  server: Server;
  port: number;
  /** The peer of each request, as /proc shows it while the request is open. */
  peers: Peer[];
  /** Requests to /hold wait until released. */
  held: ServerResponse[];
}

async function api(): Promise<Api> {
  const self: Api = { server: undefined as unknown as Server, port: 0, peers: [], held: [] };
  self.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const peer = peerOf(req.socket.remotePort!, self.port);
    if (peer) self.peers.push(peer);
    if (req.url === '/hold') self.held.push(res);
    else res.end(`api ${req.url}`);
  });
  await new Promise<void>((resolve) => self.server.listen(0, '127.0.0.1', resolve));
  self.port = (self.server.address() as { port: number }).port;
  return self;
}

function ownNs(kind: 'user' | 'pid', pid: number): string {
  return readlinkSync(`/proc/${pid}/ns/${kind}`);
}

const variants = namespaceVariants(40219);

describe.each(variants)('the run helper, $name', (variant) => {
  const skip = !variant.run;
  let served: Api;
  let runner: RunnerHandle;
  let skillsDir: string;

  beforeAll(async () => {
    if (skip) return;
    served = await api();
    const skills = writeSkills({ reach: { run: scripts, files: probe, egress: [`127.0.0.1:${served.port}`, '127.0.0.1:1'] } });
    skillsDir = skills;
    const base = tempDir('helper');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
    chmodSync(base, 0o755);
    const asUid =
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {};
    runner = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(29)], ...asUid });
  });
  afterAll(async () => {
    for (const res of served?.held ?? []) res.end();
    await runner?.stop();
    served?.server.close();
  });

  it.skipIf(skip)(
    'the process that reaches a declared API is not the runner, runs without privileges, and is gone once its run has answered',
    async () => {
      const before = served.peers.length;
      const ran = await prepareAndRun(runner.client, 'reach', 'fetch.py', [`http://127.0.0.1:${served.port}/who`]);
      expect(ran.willRun.isolation).toBe(variant.level);
      expect(JSON.parse(text(ran.result.stdout))).toEqual({ status: 200, body: 'api /who' });
      const peer = served.peers[before]!;
      expect(peer, 'the API saw its caller').toBeDefined();
      const runnerPid = runner.proc.pid!;
      // The runner is started through setpriv (exec), so its pid is the spawned process's.
      expect(peer.pid).not.toBe(runnerPid);
      expect(peer.cmdline).toContain('skill-mcp-helper.cjs');
      expect(peer.noNewPrivs).toBe('1');
      expect(peer.capEff).toBe('0000000000000000');
      expect(peer.seccomp).toBe('2');
      const accept = auditLines(runner.stateDir).find((l) => l['event'] === 'run.accept' && l['run_id'] === ran.result.runId)!;
      if (variant.level === 'namespace-uid') {
        // Security: a uid of its own — not root, not the run's (whose script could then signal or trace it).
        expect(peer.uid).not.toBe(0);
        expect(peer.uid).not.toBe(accept['uid']);
      } else {
        // One uid for everything: the helper's own user and pid namespaces keep the script (and the runner) out of reach.
        expect(peer.userNs).not.toBe(ownNs('user', runnerPid));
        expect(peer.pidNs).not.toBe(ownNs('pid', runnerPid));
      }
      // It lives as long as its run: gone once the run answered (killed at its close; the spare for the next run is another process).
      expect(await until(() => !existsSync(`/proc/${peer.pid}`), 10_000)).toBe(true);
    },
  );

  it.skipIf(skip)('a script cannot signal or read its helper, even knowing its host pid', async () => {
    // The spare the next run will get: the helper process of this runner that has no run yet
    // (started once the last run answered).
    expect(await until(() => helperPids(runner.proc.pid!).length > 0, 30_000)).toBe(true);
    const spareBefore = helperPids(runner.proc.pid!);
    const before = served.peers.length;
    const ran = await prepareAndRun(runner.client, 'reach', 'touch.py', [String(spareBefore[0]), `http://127.0.0.1:${served.port}/after`]);
    const seen = JSON.parse(text(ran.result.stdout)) as Record<string, unknown>;
    // In its own pid namespace the pid names nothing (or something of its own); either way not the helper.
    expect(['ProcessLookupError', 'PermissionError']).toContain(seen['kill']);
    expect(['FileNotFoundError', 'PermissionError']).toContain(seen['environ']);
    // And the helper still carried the script's request after the attempt.
    expect(seen['fetch']).toBe(200);
    expect(served.peers[before]?.pid).toBe(spareBefore[0]);
  });

  it.skipIf(skip)(
    'malformed requests, a 200 kB header and TLS garbage end only those connections: the runner stays up and the next run works',
    async () => {
      const ran = await prepareAndRun(runner.client, 'reach', 'garbage.py');
      const out = JSON.parse(text(ran.result.stdout)) as Record<string, string>;
      expect(out['garbage']).toMatch(/^HTTP\/1\.1 400|^$|ConnectionResetError/);
      expect(out['huge_header']).toMatch(/^HTTP\/1\.1 431|^HTTP\/1\.1 400|ConnectionResetError|^$/);
      expect(out['connect_refused']).toMatch(/^HTTP\/1\.1 (403|502)/);
      const exit = auditLines(runner.stateDir).find((l) => l['event'] === 'run.exit' && l['run_id'] === ran.result.runId)!;
      expect(exit['ended']).toBe('exit');
      // Each connection the proxy read a destination from is on record for this run (127.0.0.1:1 is declared, and closed).
      const lines = auditLines(runner.stateDir).filter((l) => l['event'] === 'egress' && l['run_id'] === ran.result.runId);
      expect(lines.find((l) => l['destination'] === '127.0.0.1:1')).toMatchObject({ decision: 'allowed', reason: 'connect-failed' });
      expect(lines.length).toBeGreaterThanOrEqual(2);
      const next = await prepareAndRun(runner.client, 'reach', 'fetch.py', [`http://127.0.0.1:${served.port}/next`]);
      expect(JSON.parse(text(next.result.stdout))).toEqual({ status: 200, body: 'api /next' });
    },
  );

  /** A run whose request the API holds, once its helper has connected: the run and that helper. */
  async function heldRun() {
    const before = served.peers.length;
    const args = [`http://127.0.0.1:${served.port}/hold`];
    const prepared = await runner.client.prepare({ skill: 'reach', script: 'fetch.py', args });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const running = runner.client.run(
      { skill: 'reach', script: 'fetch.py', args, confirmToken: prepared.result.confirmToken },
      { timeoutMs: 40_000 },
    );
    expect(await until(() => served.held.length > 0 && served.peers.length > before, 30_000)).toBe(true);
    return { running, helper: served.peers[before]! };
  }

  it.skipIf(skip)(
    'a run whose helper cannot be given it is refused before anything runs (the sandbox never let go, the token unspent, no accept line, no host path); the same approval runs once it can',
    async () => {
      // The operator's upstream CA file, read again for every run (docs/secrets-proxy.md), gone between the preview and the run.
      const dir = tempDir('helper-ca');
      chmodSync(dir, 0o755);
      const caFile = join(dir, 'upstream.pem');
      writeFileSync(caFile, `${rootCertificates[0]}\n`, { mode: 0o644 });
      const base = tempDir('helper-ca-runner');
      if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
      chmodSync(base, 0o755);
      const asUid =
        variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {};
      const own = await startRunner({
        env: { SKILLS_DIR: skillsDir, SKILL_MCP_EGRESS_CA_FILE: caFile },
        base,
        args: ['--uid-range', uidRange(31)],
        ...asUid,
      });
      try {
        const args = [`http://127.0.0.1:${served.port}/after-ca`];
        const prepared = await own.client.prepare({ skill: 'reach', script: 'fetch.py', args });
        if (!prepared.ok) throw new Error(prepared.error.message);
        const { confirmToken } = prepared.result;
        rmSync(caFile);
        const refused = await own.client.run({ skill: 'reach', script: 'fetch.py', args, confirmToken });
        expect(refused).toMatchObject({ ok: false, error: { code: 'SANDBOX_UNAVAILABLE' } });
        if (refused.ok) return;
        expect(refused.error.message).toMatch(
          /network helper could not start \(SKILL_MCP_EGRESS_CA_FILE could not be read \(ENOENT\)\); nothing was run/,
        );
        expect(refused.error.message).not.toContain(dir);
        expect(auditLines(own.stateDir).filter((l) => l['event'] === 'run.accept')).toEqual([]);
        writeFileSync(caFile, `${rootCertificates[0]}\n`, { mode: 0o644 });
        // A held sandbox (the go-ahead) is refused before the spend: the same approval runs. Otherwise
        // the token was spent before the run's steps, and the refusal says to ask again.
        if (refused.error.message.endsWith('and its token was not spent')) {
          const ran = await own.client.run({ skill: 'reach', script: 'fetch.py', args, confirmToken }, { timeoutMs: 40_000 });
          if (!ran.ok) throw new Error(ran.error.message);
          expect(JSON.parse(text(ran.result.stdout))).toEqual({ status: 200, body: 'api /after-ca' });
        } else {
          expect(refused.error.message).toMatch(/, but its token was used: ask again for a fresh preview$/);
          const again = await prepareAndRun(own.client, 'reach', 'fetch.py', args);
          expect(JSON.parse(text(again.result.stdout))).toEqual({ status: 200, body: 'api /after-ca' });
        }
      } finally {
        await own.stop();
      }
    },
  );

  it.skipIf(skip)(
    'a helper that dies while its script runs ends only that run (helper-failed, said in the result and the audit); the runner serves the next',
    async () => {
      const { running, helper } = await heldRun();
      // A crash, as from a bug a hostile input found: the helper is killed from outside.
      process.kill(helper.pid, 'SIGKILL');
      const answer = await running;
      if (!answer.ok) throw new Error(answer.error.message);
      expect(answer.result.cancelled).toBe(true);
      expect((answer.result as { egressNote?: string }).egressNote).toMatch(/network helper .* failed/);
      const exit = auditLines(runner.stateDir).find((l) => l['event'] === 'run.exit' && l['run_id'] === answer.result.runId)!;
      expect(exit['ended']).toBe('helper-failed');
      expect(exit['helper_failed']).toMatch(/exited/);
      for (const res of served.held.splice(0)) res.end();
      const next = await prepareAndRun(runner.client, 'reach', 'fetch.py', [`http://127.0.0.1:${served.port}/after-crash`]);
      expect(JSON.parse(text(next.result.stdout))).toEqual({ status: 200, body: 'api /after-crash' });
    },
  );

  it.skipIf(skip)(
    'a helper that died while its script ran, heard of only after the script ended by itself: still the helper’s failure, not the script’s exit',
    async () => {
      const { running, helper } = await heldRun();
      // The helper's sandbox steps (its bubblewrap) stopped, they keep its pipes open: the runner
      // does not hear of the death, while the script sees its connection cut and ends by itself.
      const chain = ancestorsBelow(helper.pid, runner.proc.pid!) ?? [];
      expect(chain.length).toBeGreaterThan(0);
      for (const pid of chain) process.kill(pid, 'SIGSTOP');
      try {
        process.kill(helper.pid, 'SIGKILL');
        const answer = await running;
        if (!answer.ok) throw new Error(answer.error.message);
        expect(answer.result.cancelled).toBe(true);
        const exit = auditLines(runner.stateDir).find((l) => l['event'] === 'run.exit' && l['run_id'] === answer.result.runId)!;
        expect(exit['ended']).toBe('helper-failed');
      } finally {
        for (const pid of chain) {
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // killed at the run's end
          }
        }
        for (const res of served.held.splice(0)) res.end();
      }
    },
  );
});

/** This runner's helper processes (argv names the helper bundle), by their outer pid: each bubblewrap's child node. */
function helperPids(runnerPid: number): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes('skill-mcp-helper.cjs')) continue;
      // The chain's steps (setpriv, bwrap, prlimit) name the bundle too; the helper is the node at its end.
      const program = cmdline.split('\0')[0]!;
      if (program.endsWith('bwrap') || program.endsWith('setpriv') || program.endsWith('prlimit')) continue;
      if (descendsFrom(Number(pid), runnerPid)) found.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The parent of `pid` (/proc/PID/stat's fourth field, counted after the command name). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The processes between `pid` and `ancestor`, both left out; undefined when `ancestor` is not one. */
function ancestorsBelow(pid: number, ancestor: number): number[] | undefined {
  const chain: number[] = [];
  for (let at = parentOf(pid); at > 1; at = parentOf(at)) {
    if (at === ancestor) return chain;
    chain.push(at);
  }
  return undefined;
}

function descendsFrom(pid: number, ancestor: number): boolean {
  return ancestorsBelow(pid, ancestor) !== undefined;
}

describe.skipIf(!isRoot || !namespaceVariants(40219)[1]!.run)('a helper holds no other run’s secret (its memory read as root)', () => {
  const VALUES = { alice: 'alice-secret-value-7f3a9c', bob: 'bob-secret-value-52e18d' };
  let served: Api;
  let runner: RunnerHandle;

  beforeAll(async () => {
    served = await api();
    const root = writeSkills({
      keyed: { run: [{ script: 'fetch.py', interpreter: 'python3', timeout: 40 }], files: { 'fetch.py': probe['fetch.py'] } },
    });
    // A secret bound to a host of the run's egress (its value is injected there only; here the helper just holds it).
    writeFileSync(
      join(root, 'keyed', 'SKILL.md'),
      `---\nname: keyed\ndescription: test skill keyed\nmcp-host:\n  version: 1\n  run:\n    - script: fetch.py\n      interpreter: python3\n      timeout: 40\n  egress: ["127.0.0.1:${served.port}", "127.0.0.1:1"]\n  secrets:\n    - name: API_TOKEN\n      hosts: ["127.0.0.1:1"]\n---\nTest skill.\n`,
    );
    const secrets = join(tempDir('helper-secrets'), 'values');
    for (const [who, value] of Object.entries(VALUES)) {
      mkdirSync(join(secrets, who), { recursive: true, mode: 0o700 });
      writeFileSync(join(secrets, who, 'API_TOKEN'), `${value}\n`, { mode: 0o600 });
    }
    const grant = JSON.stringify([
      { skill: 'keyed', script: 'fetch.py', egress: [`127.0.0.1:${served.port}`, '127.0.0.1:1'], secrets: [{ name: 'API_TOKEN' }] },
    ]);
    runner = await startRunner({
      env: { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_SECRETS_DIR: secrets },
      args: ['--uid-range', uidRange(30)],
    });
  });
  afterAll(async () => {
    for (const res of served?.held ?? []) res.end();
    await runner?.stop();
    served?.server.close();
  });

  async function runAs(subject: string, path: string) {
    const identity = { subject };
    const args = [`http://127.0.0.1:${served.port}${path}`];
    const prepared = await runner.client.prepare({ skill: 'keyed', script: 'fetch.py', args, identity });
    if (!prepared.ok) throw new Error(prepared.error.message);
    return runner.client.run(
      { skill: 'keyed', script: 'fetch.py', args, identity, confirmToken: prepared.result.confirmToken },
      { timeoutMs: 40_000 },
    );
  }

  it("alice's run ends; bob's helper, serving his run, holds his value and not hers", async () => {
    const alice = await runAs('alice', '/alice');
    if (!alice.ok) throw new Error(alice.error.message);
    const before = served.peers.length;
    const bob = runAs('bob', '/hold');
    expect(await until(() => served.held.length > 0 && served.peers.length > before, 30_000)).toBe(true);
    const helper = served.peers[before]!;
    expect(helper.cmdline).toContain('skill-mcp-helper.cjs');
    // The scan works: his own value is there (it came in the helper's start message).
    expect(memoryHolds(helper.pid, VALUES.bob)).toBe(true);
    expect(memoryHolds(helper.pid, VALUES.alice)).toBe(false);
    // Nor does the spare waiting for the next run hold either.
    for (const spare of helperPids(runner.proc.pid!).filter((p) => p !== helper.pid)) {
      expect(memoryHolds(spare, VALUES.alice)).toBe(false);
      expect(memoryHolds(spare, VALUES.bob)).toBe(false);
    }
    for (const res of served.held.splice(0)) res.end();
    const answer = await bob;
    if (!answer.ok) throw new Error(answer.error.message);
  });
});

/**
 * Attack: a bound secret's value in a walker (as root a process of the run's uid, after the run).
 * The walker's bundle is wrapped to record every frame of orders it is sent (a copy of dist/, the
 * runner started from it). A run with a bound secret has a helper, which redacts its returns: its
 * walker's orders carry none of the value. A run with a legacy `env` secret and no egress is
 * redacted by its walk: its orders carry that value (which the run had anyway) — the recording works.
 */
describe.skipIf(!isRoot || !namespaceVariants(40219)[1]!.run)('attack: a walker is never given a bound secret’s value', () => {
  const BOUND = 'bound-secret-value-4d21c8e7';
  const LEGACY = 'legacy-secret-value-9b3f02aa';
  let served: Api;
  let runner: RunnerHandle;
  let orders: string;

  beforeAll(async () => {
    served = await api();
    const own = tempDir('walker-orders');
    const dist = join(own, 'dist');
    cpSync(join(REPO, 'dist'), dist, { recursive: true });
    renameSync(join(dist, 'skill-mcp-walk.cjs'), join(dist, 'skill-mcp-walk-real.cjs'));
    orders = join(own, 'orders.log');
    writeFileSync(orders, '');
    // Appended as the walker reads, before it becomes the run's uid (a later chunk may not be: caught).
    writeFileSync(
      join(dist, 'skill-mcp-walk.cjs'),
      `'use strict';\nconst { appendFileSync } = require('node:fs');\nprocess.stdin.on('data', (chunk) => { try { appendFileSync(${JSON.stringify(orders)}, chunk); } catch {} });\nrequire(${JSON.stringify(join(dist, 'skill-mcp-walk-real.cjs'))});\n`,
    );
    execFileSync('chmod', ['-R', 'a+rX', own]);
    chmodSync(orders, 0o666);
    const root = writeSkills({
      keyed: { run: [{ script: 'fetch.py', interpreter: 'python3', timeout: 40 }], files: { 'fetch.py': probe['fetch.py'] } },
      legacy: { run: [{ script: 'leak.py', interpreter: 'python3', timeout: 40 }], files: {} },
    });
    writeFileSync(
      join(root, 'keyed', 'SKILL.md'),
      `---\nname: keyed\ndescription: test skill keyed\nmcp-host:\n  version: 1\n  run:\n    - script: fetch.py\n      interpreter: python3\n      timeout: 40\n  egress: ["127.0.0.1:${served.port}", "127.0.0.1:1"]\n  secrets:\n    - name: API_TOKEN\n      hosts: ["127.0.0.1:1"]\n---\nTest skill.\n`,
    );
    writeFileSync(
      join(root, 'legacy', 'SKILL.md'),
      '---\nname: legacy\ndescription: test skill legacy\nmcp-host:\n  version: 1\n  run:\n    - script: leak.py\n      interpreter: python3\n      env: [LEGACY_KEY]\n      timeout: 40\n  env:\n    - name: LEGACY_KEY\n      secret: true\n---\nTest skill.\n',
    );
    writeFileSync(join(root, 'legacy', 'leak.py'), 'import os\nk = os.environ["LEGACY_KEY"]\nopen("out.txt", "w").write(k)\nprint(k)\n');
    const secrets = join(tempDir('walker-secrets'), 'values');
    mkdirSync(join(secrets, 'alice'), { recursive: true, mode: 0o700 });
    writeFileSync(join(secrets, 'alice', 'API_TOKEN'), `${BOUND}\n`, { mode: 0o600 });
    const grant = JSON.stringify([
      { skill: 'keyed', script: 'fetch.py', egress: [`127.0.0.1:${served.port}`, '127.0.0.1:1'], secrets: [{ name: 'API_TOKEN' }] },
      { skill: 'legacy', script: 'leak.py', env: ['LEGACY_KEY'] },
    ]);
    runner = await startRunner({
      bin: join(dist, 'skill-mcp.js'),
      env: { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_SECRETS_DIR: secrets, LEGACY_KEY: LEGACY },
      args: ['--uid-range', uidRange(44)],
    });
  });
  afterAll(async () => {
    await runner?.stop();
    served?.server.close();
  });

  async function run(skill: string, script: string, args: string[]) {
    const identity = { subject: 'alice' };
    const prepared = await runner.client.prepare({ skill, script, args, identity });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const ran = await runner.client.run(
      { skill, script, args, identity, confirmToken: prepared.result.confirmToken },
      { timeoutMs: 40_000 },
    );
    if (!ran.ok) throw new Error(ran.error.message);
    return ran.result;
  }

  it("a run with a bound secret: its walker's orders hold none of the value; a run with a legacy env secret: its walk redacts with it", async () => {
    const keyed = await run('keyed', 'fetch.py', [`http://127.0.0.1:${served.port}/ok`]);
    expect(JSON.parse(text(keyed.stdout))).toEqual({ status: 200, body: 'api /ok' });
    const afterKeyed = readFileSync(orders);
    // The keyed run's walker was sent its orders (the recording saw them) — and not the value.
    expect(afterKeyed.length).toBeGreaterThan(0);
    expect(afterKeyed.includes(Buffer.from(BOUND))).toBe(false);
    const legacy = await run('legacy', 'leak.py', []);
    expect(text(legacy.stdout).trim()).toBe('[secret:LEGACY_KEY]');
    expect((legacy.files ?? []).map((f) => [f.path, f.bytes && Buffer.from(f.bytes).toString()])).toEqual([
      ['out.txt', '[secret:LEGACY_KEY]'],
    ]);
    expect(readFileSync(orders).subarray(afterKeyed.length).includes(Buffer.from(LEGACY))).toBe(true);
    expect(readFileSync(orders).includes(Buffer.from(BOUND))).toBe(false);
  });
});
