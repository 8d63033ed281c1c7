/**
 * @module Attacks on what every level shares with the host kernel (docs/isolation.md, "The
 * syscall filter", "Memory"): the session keyring, shared memory past the memory cap, and the
 * kernel interfaces the filter closes (AF_VSOCK, io_uring, bpf, unshare, mount). Real runs through
 * a real runner at the level this machine gives (CI: root and an ordinary uid, with and without
 * bubblewrap). The runner is started inside a session keyring that holds a key, as a person's
 * login session would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedLevel, hasBwrap } from '../levels.js';
import { isRoot, prepareAndRun, startRunner, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { SOCKETS_PY, SYSCALLS_PY, keyctlHere } from './syscalls.js';

const MIB = 1024 * 1024;
const level = expectedLevel(isRoot);
const KEY = `skill-mcp-launcher-key-${process.pid}-${Date.now()}`;
const KEY_SECRET = `keyring-secret-${Date.now()}-qv`;
const PLANT = `skill-mcp-planted-${process.pid}`;

const scripts = {
  // Reads the runner's session keyring every way there is, and tries to plant a key in it.
  'keyring.py': `import ctypes, json, os, subprocess
${SYSCALLS_PY}def call(name, *args):
    return res(libc.syscall(NR[name], *args))
out = {}
out["keyctl_get_session"] = call("keyctl", 0, ctypes.c_long(-3), 0)
out["request_key"] = call("request_key", b"user", b"${KEY}", None, 0)
out["add_key_plant"] = call("add_key", b"user", b"${PLANT}", b"x", 1, ctypes.c_long(-3))
try:
    keys = open("/proc/keys").read()
    out["proc_keys_shows_key"] = "${KEY}" in keys
except OSError as e:
    out["proc_keys_shows_key"] = False
try:
    r = subprocess.run(["keyctl", "show", "@s"], capture_output=True, text=True)
    out["keyctl_show"] = "${KEY}" in r.stdout or "${KEY_SECRET}" in r.stdout
except OSError:
    out["keyctl_show"] = False
print(json.dumps(out))
`,
  // MAP_SHARED anonymous memory, touched page by page: RLIMIT_DATA does not count it.
  'shared-map.py': `import mmap, sys
size = int(sys.argv[1]) * 1024 * 1024
m = mmap.mmap(-1, size, flags=mmap.MAP_SHARED)
chunk = 16 * 1024 * 1024
for off in range(0, size, chunk):
    m[off:off + chunk] = b"\\x01" * chunk
    print("touched", (off + chunk) // (1024 * 1024), flush=True)
print("touched all", flush=True)
`,
  // System V shm: shmget + shmat + touching every page.
  'sysv-shm.py': `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
size = int(sys.argv[1]) * 1024 * 1024
shmid = libc.shmget(0, ctypes.c_size_t(size), 0o1000 | 0o600)
if shmid < 0:
    print("shmget refused", os.strerror(ctypes.get_errno()), flush=True); sys.exit(0)
addr = libc.shmat(shmid, None, 0)
libc.shmctl(shmid, 0, None)  # IPC_RMID: gone once detached
if addr in (None, ctypes.c_void_p(-1).value):
    print("shmat refused", os.strerror(ctypes.get_errno()), flush=True); sys.exit(0)
chunk = 16 * 1024 * 1024
for off in range(0, size, chunk):
    ctypes.memset(addr + off, 1, chunk)
    print("touched", (off + chunk) // (1024 * 1024), flush=True)
print("touched all", flush=True)
`,
  // Filling /dev/shm (bubblewrap: a 16 MiB tmpfs).
  'dev-shm.py': `import os
n = 0
try:
    with open("/dev/shm/fill", "wb") as f:
        while n < 256 * 1024 * 1024:
            f.write(b"x" * 1048576); f.flush(); n += 1048576
    print("wrote", n)
except OSError as e:
    print("stopped", n, e.errno)
`,
  // The kernel interfaces the filter closes, and what must keep working.
  'kernel.py': `import ctypes, json, os, socket, subprocess, threading
${SYSCALLS_PY}${SOCKETS_PY}sock("af_vsock", 40, socket.SOCK_STREAM)
sock("af_packet", 17, socket.SOCK_RAW)
sock("af_alg", 38, socket.SOCK_SEQPACKET)
sock("netlink_netfilter", 16, socket.SOCK_RAW, 12)
sock("netlink_route", 16, socket.SOCK_RAW, 0)
sock("af_unix", socket.AF_UNIX, socket.SOCK_STREAM)
sock("af_inet", socket.AF_INET, socket.SOCK_STREAM)
sock("af_inet6", socket.AF_INET6, socket.SOCK_STREAM)
try:
    a, b = socket.socketpair(40, socket.SOCK_STREAM); out["socketpair_vsock"] = "ok"
except OSError as e:
    out["socketpair_vsock"] = os.strerror(e.errno)
params = ctypes.create_string_buffer(120)
out["io_uring_setup"] = res(libc.syscall(NR["io_uring_setup"], 8, params))
attr = ctypes.create_string_buffer(128)
out["bpf"] = res(libc.syscall(NR["bpf"], 5, attr, 128))
out["perf_event_open"] = res(libc.syscall(NR["perf_event_open"], attr, 0, -1, -1, 0))
out["userfaultfd"] = res(libc.syscall(NR["userfaultfd"], 0))
out["unshare_user"] = res(libc.unshare(0x10000000))
out["unshare_net"] = res(libc.unshare(0x40000000))
out["unshare_files"] = res(libc.unshare(0x00000400))
out["setns"] = res(libc.syscall(NR["setns"], 0, 0))
out["mount_tmpfs"] = res(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
out["umount"] = res(libc.umount2(b"/proc", 2))
out["clone3"] = res(libc.syscall(NR["clone3"], None, 0))
out["personality_no_aslr"] = res(libc.personality(0x0040000))
# The death signal the chain armed (SIGKILL): clearing it, or making it a signal pid 1 ignores, is refused.
out["pdeathsig_clear"] = res(libc.prctl(1, 0, 0, 0, 0))
out["pdeathsig_term"] = res(libc.prctl(1, 15, 0, 0, 0))
out["pdeathsig_kill"] = res(libc.prctl(1, 9, 0, 0, 0))
sig = ctypes.c_int(-1)
libc.prctl(2, ctypes.byref(sig), 0, 0, 0)
out["pdeathsig_after"] = sig.value
out["prctl_name"] = res(libc.prctl(15, b"renamed", 0, 0, 0))
t = threading.Thread(target=lambda: out.__setitem__("thread", "ok")); t.start(); t.join()
out["subprocess"] = subprocess.run(["true"]).returncode
print(json.dumps(out))
`,
  // Calls outside the allowlist, and numbers the filter's table does not know.
  'allowlist.py': `import ctypes, json, os
${SYSCALLS_PY}out = {}
# struct file_handle: handle_bytes (128), handle_type, then the handle itself.
handle = ctypes.create_string_buffer((128).to_bytes(4, "little") + bytes(4 + 128))
mount_id = ctypes.c_int(0)
out["name_to_handle_at"] = res(libc.syscall(NR["name_to_handle_at"], -100, b"/", handle, ctypes.byref(mount_id), 0))
out["open_by_handle_at"] = res(libc.syscall(NR["open_by_handle_at"], -100, handle, 0))
out["memfd_secret"] = res(libc.syscall(NR["memfd_secret"], 0))
pid = os.getpid()
out["kcmp"] = res(libc.syscall(NR["kcmp"], pid, pid, 0, 0, 0))
out["unassigned_hole"] = res(libc.syscall(NR["hole"]))
out["past_the_table"] = res(libc.syscall(1000))
out["read_still"] = res(libc.syscall(0 if platform.machine() == "x86_64" else 63, 0, None, 0))
print(json.dumps(out))
`,
  'ifaces.js': `console.log(JSON.stringify(Object.keys(require('node:os').networkInterfaces())));
`,
};

const declared = Object.keys(scripts).map((script) => ({ script, interpreter: script.endsWith('.js') ? 'node' : 'python3', timeout: 30 }));

describe.skipIf(process.platform !== 'linux')(`kernel surface attacks at level ${level}`, () => {
  let runner: RunnerHandle;
  const skills = writeSkills({ k: { run: declared, files: scripts } });
  const run = (script: string, args: string[] = []) => prepareAndRun(runner.client, 'k', script, args);

  beforeAll(async () => {
    // The runner's session keyring holds a key, as a person's login session would.
    const prefix = keyctlHere
      ? ['keyctl', 'session', '-', 'sh', '-c', `keyctl add user ${KEY} ${KEY_SECRET} @s >/dev/null && exec "$@"`, 'sh']
      : undefined;
    runner = await startRunner({
      env: { SKILLS_DIR: skills, SKILL_MCP_RUN_MEMORY_BYTES: String(64 * MIB), SKILL_MCP_RUN_TMP_BYTES: String(8 * MIB) },
      args: ['--uid-range', uidRange(21)],
      ...(prefix ? { spawnPrefix: prefix } : {}),
    });
  });
  afterAll(async () => {
    await runner?.stop();
  });

  it('describe names the syscall filter and the fresh session keyring', async () => {
    const described = await runner.client.describe();
    expect(described.ok).toBe(true);
    const isolation = described.ok ? described.result.isolation : undefined;
    expect(isolation?.level).toBe(level);
    expect(isolation?.mechanisms).toContain('seccomp');
    expect(isolation?.mechanisms).toContain('session-keyring');
    expect(isolation?.detail).toContain('syscall filter');
  });

  it.skipIf(!keyctlHere)("keyring read/plant: a run cannot read the key the runner's session holds, nor plant one", async () => {
    const { result } = await run('keyring.py');
    const out = JSON.parse(text(result.stdout)) as Record<string, unknown>;
    expect(out).toEqual({
      keyctl_get_session: 'Operation not permitted',
      request_key: 'Operation not permitted',
      add_key_plant: 'Operation not permitted',
      // Known gap (docs/isolation.md): same-uid has no mount namespace to hide /proc/keys, which
      // lists the descriptions (never the contents) of every key of the person's uid.
      proc_keys_shows_key: level === 'same-uid',
      keyctl_show: false,
    });
    expect(text(result.stdout) + text(result.stderr)).not.toContain(KEY_SECRET);
  });

  it('kernel surface: AF_VSOCK, AF_PACKET, AF_ALG, netfilter netlink, io_uring, bpf, perf, userfaultfd, unshare (any flags), setns, mount, clearing the parent-death signal → EPERM; clone3 → ENOSYS; threads, fork, IP sockets and other prctl options still work', async () => {
    const { result } = await run('kernel.py');
    expect(text(result.stderr)).toBe('');
    const out = JSON.parse(text(result.stdout)) as Record<string, unknown>;
    const EPERM = 'Operation not permitted';
    expect(out).toMatchObject({
      af_vsock: EPERM,
      af_packet: EPERM,
      af_alg: EPERM,
      netlink_netfilter: EPERM,
      socketpair_vsock: EPERM,
      io_uring_setup: EPERM,
      bpf: EPERM,
      perf_event_open: EPERM,
      userfaultfd: EPERM,
      unshare_user: EPERM,
      unshare_net: EPERM,
      setns: EPERM,
      mount_tmpfs: EPERM,
      umount: EPERM,
      clone3: 'Function not implemented',
      personality_no_aslr: EPERM,
      // Attack: a script clearing its death signal to outlive a killed runner (docs/isolation.md).
      pdeathsig_clear: EPERM,
      pdeathsig_term: EPERM,
      pdeathsig_kill: 'ok',
      pdeathsig_after: 9,
      prctl_name: 'ok',
      netlink_route: 'ok',
      af_unix: 'ok',
      af_inet: 'ok',
      af_inet6: expect.stringMatching(/^(ok|Address family not supported by protocol)$/),
      // Docker's default has no unshare at all; nothing a script runs needs it.
      unshare_files: EPERM,
      thread: 'ok',
      subprocess: 0,
    });
  });

  it('attack: calls outside the allowlist — memfd_secret, open_by_handle_at, name_to_handle_at, kcmp — are EPERM; numbers the table does not know are ENOSYS', async () => {
    const { result } = await run('allowlist.py');
    expect(text(result.stderr)).toBe('');
    expect(JSON.parse(text(result.stdout))).toEqual({
      name_to_handle_at: 'Operation not permitted',
      open_by_handle_at: 'Operation not permitted',
      memfd_secret: 'Operation not permitted',
      kcmp: 'Operation not permitted',
      unassigned_hole: 'Function not implemented',
      past_the_table: 'Function not implemented',
      read_still: 'ok',
    });
  });

  it('node still lists its network interfaces (route netlink is allowed: getifaddrs)', async () => {
    const { result } = await run('ifaces.js');
    expect(text(result.stderr)).toBe('');
    expect(result.exitCode).toBe(0);
    // uid-sandbox's loopback is down (listed only when up); bubblewrap brings its own up.
    if (hasBwrap(level)) expect(JSON.parse(text(result.stdout))).toContain('lo');
    else expect(Array.isArray(JSON.parse(text(result.stdout)))).toBe(true);
  });

  describe.skipIf(!isRoot)('memory cap bypass (root: a memory cgroup per run)', () => {
    it('describe names the memory cgroup', async () => {
      const described = await runner.client.describe();
      const mechanisms = described.ok ? described.result.isolation.mechanisms : [];
      expect(mechanisms.some((m) => m.startsWith('memory-cgroup-'))).toBe(true);
    });

    it('memory cap bypass via MAP_SHARED: 512 MiB of shared anonymous memory under a 64 MiB cap is stopped', async () => {
      const { result } = await run('shared-map.py', ['512']);
      expect(text(result.stdout)).not.toContain('touched all');
      expect(result.exitCode === 0 && result.signal === null).toBe(false);
      expect(result.memoryLimited).toBe(true);
    });

    it('memory cap bypass via System V shm: a 512 MiB segment touched under a 64 MiB cap is stopped', async () => {
      const { result } = await run('sysv-shm.py', ['512']);
      expect(text(result.stdout)).not.toContain('touched all');
      expect(result.memoryLimited || /refused/.test(text(result.stdout))).toBe(true);
    });
  });

  describe.skipIf(isRoot)('memory as an ordinary user (no cgroup)', () => {
    it('the isolation detail says System V shm is refused and MAP_SHARED memory is not counted', async () => {
      const described = await runner.client.describe();
      const isolation = described.ok ? described.result.isolation : undefined;
      expect(isolation?.detail).toContain('System V shared memory is refused (shmget answers EPERM)');
      expect(isolation?.detail).toContain('MAP_SHARED or a memfd is not counted by the per-process cap');
      expect(isolation?.mechanisms).toContain('sysv-shm-refused');
    });

    it('attack: memory cap bypass via System V shm as an ordinary user — a 512 MiB segment under a 64 MiB cap is refused at shmget (it was touched whole)', async () => {
      const { result } = await run('sysv-shm.py', ['512']);
      expect(text(result.stdout)).toBe('shmget refused Operation not permitted\n');
      expect(result.exitCode).toBe(0);
    });

    it.skipIf(!hasBwrap(level))('memory cap bypass via /dev/shm: filling it stops at its 16 MiB tmpfs (ENOSPC)', async () => {
      const { result } = await run('dev-shm.py');
      const [word, bytes, errno] = text(result.stdout).trim().split(' ');
      expect(word).toBe('stopped');
      expect(Number(bytes)).toBeLessThanOrEqual(16 * MIB);
      expect(errno).toBe('28');
    });
  });
});
