/**
 * The namespace sandbox (bubblewrap) against a probe skill whose declared scripts take paths, pids
 * and ports as arguments — the attacks that used to succeed for a runner started as an ordinary
 * user (the common launch: Claude Code, Claude Desktop or Cursor starting skill-mcp as the
 * person's own uid), and that a root runner did not stop either (network, memory, IPC). Each runs
 * through the real runner on its real socket: as an ordinary uid (level `namespace`), and as root
 * (level `namespace-uid`, root only). Needs bubblewrap with unprivileged user namespaces; CI's
 * SKILL_MCP_TEST_EXPECT=bwrap makes a machine without it fail instead of skipping.
 *
 * Tier `level`: attacks on the sandbox, skipped without bubblewrap. Not `node`: the probes are
 * python3 and system tools, so nothing here changes with the Node major; the rlimits (set through
 * posix_spawn and koffi) and the memory cap on a node script are namespace-sandbox-limits.test.ts,
 * in `node`. A declared script name that reads as an interpreter option is refused before anything
 * runs: script-option-names.test.ts (front).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const marker = `ns-probe-${process.pid}-${Date.now()}`;
const MIB = 1024 * 1024;

const probe = {
  'read.py': `import sys, json
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "rb") as f: out[p] = "read:" + str(len(f.read()))
    except Exception as e: out[p] = type(e).__name__
print(json.dumps(out))
`,
  'write.py': `import sys, json
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "w") as f: f.write("x")
        out[p] = "written"
    except Exception as e: out[p] = type(e).__name__
print(json.dumps(out))
`,
  'connect.py': `import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("connected")
except Exception as e: print(type(e).__name__)
`,
  'signal.py': `import os, sys, json
out = {}
for pid in sys.argv[1:]:
    try:
        os.kill(int(pid), 0); out[pid] = "alive"
    except Exception as e: out[pid] = type(e).__name__
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f: f.read(); out[pid + "/proc"] = "read"
    except Exception as e: out[pid + "/proc"] = type(e).__name__
print(json.dumps(out))
`,
  // Escapes by process tricks: its own process group, a double fork with setsid, both sleeping on.
  'detach.py': `import os, subprocess
subprocess.Popen(["sleep", "1000", "${marker}-pgrp"], process_group=0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "1000", "${marker}-daemon"])
    os._exit(0)
print("detached", flush=True)
`,
  'shm-make.py': `import subprocess
r = subprocess.run(["ipcmk", "-M", "1048576"], capture_output=True, text=True)
print(r.stdout.strip())
print(r.stderr.strip())
`,
  'shm-list.py': `print(open("/proc/sysvipc/shm").read().strip().count("\\n"))
`,
  'nested.py': `import subprocess
r = subprocess.run(["unshare", "-Urnm", "id", "-u"], capture_output=True, text=True)
print(r.returncode, r.stdout.strip(), r.stderr.strip())
`,
  'fill.py': `import os
n = 0
try:
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(b"x" * 65536); f.flush(); n += 65536
except OSError as e:
    print("stopped", n, e.errno)
`,
  'whoami.py': `import os, json
print(json.dumps({"cwd": os.getcwd(), "home": os.environ["HOME"], "tmp": os.environ["TMPDIR"], "root": sorted(os.listdir("/")), "host": os.uname().nodename, "env": dict(os.environ)}))
`,
};
const declared = Object.keys(probe).map((script) => ({ script, interpreter: script.endsWith('.js') ? 'node' : 'python3', timeout: 20 }));

const variants = namespaceVariants(40211);

describe.each(variants)('the namespace sandbox, $name', (variant) => {
  const skip = !variant.run;
  let runner: RunnerHandle;
  let home: string;
  let listener: Server;
  let port = 0;
  let connections = 0;
  const skills = writeSkills({
    probe: { run: declared, files: probe },
    neighbour: { run: [], files: { 'notes.md': 'a neighbour skill' } },
  });

  beforeAll(async () => {
    if (skip) return;
    const base = tempDir('ns');
    // The person's home, with a key and a private file of theirs outside any skill.
    home = join(base, 'home');
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY', { mode: 0o600 });
    writeFileSync(join(home, 'private.txt'), 'mine', { mode: 0o600 });
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
    chmodSync(base, 0o755);
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
    runner = await startRunner({
      env: {
        SKILLS_DIR: skills,
        HOME: home,
        SKILL_MCP_RUN_TMP_BYTES: String(8 * MIB),
        SKILL_MCP_RUN_MEMORY_BYTES: String(512 * MIB),
        // The prlimit-step note is an internal one (SKILL_MCP_LOG_LEVEL=debug).
        SKILL_MCP_LOG_LEVEL: 'debug',
      },
      base,
      args: ['--uid-range', uidRange(10)],
      ...(variant.uid !== undefined
        ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] }
        : {}),
    });
  });
  afterAll(async () => {
    await runner?.stop();
    listener?.close();
  });

  async function run(script: string, args: string[] = []) {
    const ran = await prepareAndRun(runner.client, 'probe', script, args);
    expect(ran.willRun.isolation).toBe(variant.level);
    return ran;
  }

  it.skipIf(skip)('describe and every preview name the level, its mechanisms and the memory cap', async () => {
    const described = await runner.client.describe();
    expect(described).toMatchObject({ ok: true, result: { isolation: { level: variant.level, memoryBytes: 512 * MIB } } });
    const mechanisms = described.ok ? described.result.isolation.mechanisms : [];
    for (const m of ['bwrap', 'userns', 'pidns', 'netns', 'ipcns', 'no-nested-userns', 'memory-rlimit']) expect(mechanisms).toContain(m);
    const { willRun } = await run('whoami.py');
    expect(willRun.sandbox).toEqual(mechanisms);
    expect(willRun.memoryBytes).toBe(512 * MIB);
  });

  it.skipIf(skip)(
    'sees only the system folders, a writable workspace as cwd (its skill read-only at /skill), and a private /tmp as HOME and TMPDIR',
    async () => {
      const { result } = await run('whoami.py');
      const seen = JSON.parse(text(result.stdout)) as { cwd: string; home: string; tmp: string; root: string[]; host: string };
      expect(seen).toMatchObject({ cwd: '/work', home: '/tmp', tmp: '/tmp', host: 'skill-sandbox' });
      for (const entry of seen.root)
        expect(['bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'sbin', 'skill', 'tmp', 'usr', 'work']).toContain(entry);
      expect(seen.root).not.toContain('home');
      expect(seen.root).not.toContain('root');
    },
  );

  it.skipIf(skip)(
    'gets exactly the variables the preview named, PWD=/work among them (bubblewrap exports it; the runner names it, no step removes it)',
    async () => {
      const { willRun, result } = await run('whoami.py');
      const env = (JSON.parse(text(result.stdout)) as { env: Record<string, string> }).env;
      expect(Object.keys(env).sort()).toEqual(willRun.envNames);
      expect(willRun.envNames).toContain('PWD');
      expect(env['PWD']).toBe('/work');
      expect(env['OLDPWD']).toBeUndefined();
    },
  );

  it.skipIf(skip)("cannot read the person's ~/.ssh keys, a 0600 file of theirs, another skill, or the runner's state", async () => {
    const targets = [
      join(home, '.ssh', 'id_ed25519'),
      join(home, 'private.txt'),
      join(skills, 'neighbour', 'notes.md'),
      join(runner.stateDir, 'audit.log'),
      '/etc/shadow',
      '/etc/passwd',
    ];
    const { result } = await run('read.py', targets);
    const out = JSON.parse(text(result.stdout)) as Record<string, string>;
    for (const target of targets) expect(out[target], target).not.toMatch(/^read:/);
    // Its own skill is readable, at the sandbox's path.
    const own = await run('read.py', ['/skill/SKILL.md']);
    expect(JSON.parse(text(own.result.stdout))['/skill/SKILL.md']).toMatch(/^read:\d+/);
  });

  it.skipIf(skip)("cannot write into the person's home, its own skill, /etc, or the sandbox's root", async () => {
    const targets = [join(home, `${marker}-home`), `/skill/${marker}`, `/etc/${marker}`, `/${marker}`, `/dev/${marker}`];
    const { result } = await run('write.py', targets);
    const out = JSON.parse(text(result.stdout)) as Record<string, string>;
    for (const target of targets) expect(out[target], target).not.toBe('written');
    expect(existsSync(join(home, `${marker}-home`))).toBe(false);
    expect(existsSync(join(skills, 'probe', marker))).toBe(false);
  });

  it.skipIf(skip)('cannot connect to a service on 127.0.0.1 it never declared (no network but its own loopback)', async () => {
    const { result } = await run('connect.py', [String(port)]);
    expect(text(result.stdout).trim()).toBe('ConnectionRefusedError');
    expect(connections).toBe(0);
  });

  it.skipIf(skip)('cannot see or signal the runner or the test process (its own pid namespace)', async () => {
    const pids = [String(runner.proc.pid), String(process.pid)];
    const { result } = await run('signal.py', pids);
    const out = JSON.parse(text(result.stdout)) as Record<string, string>;
    for (const pid of pids) {
      expect(out[pid]).toBe('ProcessLookupError');
      expect(out[`${pid}/proc`]).toBe('FileNotFoundError');
    }
  });

  it.skipIf(skip)('its own process group, setsid and a double fork leave nothing running after the call', async () => {
    const { result } = await run('detach.py');
    expect(text(result.stdout)).toContain('detached');
    const survivors = readdirSync('/proc').filter((pid) => {
      try {
        return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    });
    expect(survivors).toEqual([]);
  });

  it.skipIf(skip)(
    'a System V shared memory segment does not outlive its run, and the next run sees none (without a memory cgroup none is made: shmget is refused)',
    async () => {
      const described = await runner.client.describe();
      const mechanisms = described.ok ? described.result.isolation.mechanisms : [];
      const refused = mechanisms.includes('sysv-shm-refused');
      // A memory cgroup is a root runner's: without one the filter refuses shmget (docs/isolation.md, "Memory").
      expect(refused).toBe(!mechanisms.some((m) => m.startsWith('memory-cgroup-')));
      if (variant.level === 'namespace') expect(refused).toBe(true);
      const made = await run('shm-make.py');
      if (refused) expect(text(made.result.stdout) + text(made.result.stderr)).toMatch(/Operation not permitted/);
      else expect(text(made.result.stdout)).toMatch(/Shared memory id: \d+/);
      const listed = await run('shm-list.py');
      expect(text(listed.result.stdout).trim()).toBe('0');
    },
  );

  it.skipIf(skip)('cannot make a nested user namespace (unshare -Urnm fails)', async () => {
    const { result } = await run('nested.py');
    expect(text(result.stdout)).not.toMatch(/^0 0/);
    expect(text(result.stdout).split(' ')[0]).not.toBe('0');
  });

  it.skipIf(skip)('filling its /tmp stops at the cap with ENOSPC; the run returns its result and the audit log its exit', async () => {
    const { result } = await run('fill.py');
    const [word, written, errno] = text(result.stdout).trim().split(' ');
    expect(word).toBe('stopped');
    expect(Number(written)).toBeLessThanOrEqual(8 * MIB);
    expect(errno).toBe('28');
    const audit = readFileSync(join(runner.stateDir, 'audit.log'), 'utf8');
    expect(audit).toContain(`"run_id":"${result.runId}"`);
    expect(audit.split('\n').filter((l) => l.includes(result.runId) && l.includes('"run.exit"'))).toHaveLength(1);
  });
});
