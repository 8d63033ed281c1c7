/**
 * The syscall filter's table, policy and generator (runner/sandbox/seccomp-table.ts,
 * seccomp-policy.ts, seccomp-bpf.ts): the table made again from libseccomp's own
 * (`scmp_sys_resolver`, Debian package `seccomp`) and compared, the bytes checked by layout, and
 * the program run in a classic-BPF interpreter written here from the kernel's definition of the
 * instructions it may use, on seccomp_data records built here, for every number of both arches:
 * the allowlist passes, every other known call is EPERM, an unknown number ENOSYS. The kernel
 * running it is tested by real runs (kernel-attacks.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildFilter, encodeFilter, RET_ALLOW, RET_KILL_PROCESS, retErrno, stretches } from '../../runner/sandbox/seccomp-bpf.js';
import { KEYCTL_NR } from '../../runner/sandbox/seccomp-arch.js';
import {
  AF_INET,
  AF_INET6,
  AF_UNIX,
  ALLOWED,
  AUDIT_ARCH,
  ENOSYS,
  EPERM,
  REMOVED,
  RULES,
  RUN_POLICY,
  runPolicy,
  SYSCALLS,
} from '../../runner/sandbox/seccomp-policy.js';
import type { Arch, FilterPolicy } from '../../runner/sandbox/seccomp-policy.js';
import { makeTables } from '../../tools/seccomp-table.mjs';

const resolver = (() => {
  try {
    execFileSync('scmp_sys_resolver', ['-a', 'x86_64', 'read'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
})();

/** Runs a classic BPF program (the seccomp subset: ld abs, jeq/jge/jset k, ret k) on one record. */
function simulate(prog: Buffer, data: Buffer): number {
  let a = 0;
  for (let pc = 0; pc < prog.length / 8; ) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    pc += 1;
    switch (code) {
      case 0x20:
        a = data.readUInt32LE(k);
        break; // BPF_LD | BPF_W | BPF_ABS
      case 0x15:
        pc += a === k ? jt : jf;
        break; // BPF_JMP | BPF_JEQ | BPF_K
      case 0x35:
        pc += a >= k ? jt : jf;
        break; // BPF_JMP | BPF_JGE | BPF_K
      case 0x45:
        pc += (a & k) !== 0 ? jt : jf;
        break; // BPF_JMP | BPF_JSET | BPF_K
      case 0x05:
        pc += k;
        break; // BPF_JMP | BPF_JA
      case 0x06:
        return k; // BPF_RET | BPF_K
      default:
        throw new Error(`opcode ${code.toString(16)} at ${pc - 1} is not one seccomp programs here use`);
    }
  }
  throw new Error('fell off the end of the program');
}

/** struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; } */
function record(arch: number, nr: number, args: number[] = []): Buffer {
  const buf = Buffer.alloc(64);
  buf.writeUInt32LE(nr >>> 0, 0);
  buf.writeUInt32LE(arch >>> 0, 4);
  for (const [i, v] of args.entries()) buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), 16 + 8 * i);
  return buf;
}

const ARCHES = ['x86_64', 'aarch64'] as const;
const prog = encodeFilter(buildFilter(RUN_POLICY));
const nr = (name: string, arch: Arch): number => SYSCALLS[arch][name]!;
const ruled = new Set(RULES.map((r) => r.name));
const hex = (n: number): string => n.toString(16);

describe('the table and the policy', () => {
  it.skipIf(!resolver)(
    "the table is libseccomp's, made again by tools/seccomp-table.mjs, on x86_64 and aarch64 alike",
    async () => {
      expect(await makeTables()).toEqual(SYSCALLS);
    },
    60_000,
  );

  it('the launcher’s keyctl number is the table’s', () => {
    for (const arch of ARCHES) expect(KEYCTL_NR[arch]).toBe(nr('keyctl', arch));
  });

  it('every name the policy gives is a call of x86_64 or aarch64 (no typo allows or denies nothing)', () => {
    const named = [...ALLOWED.flatMap((g) => g.names), ...REMOVED.map((r) => r.name), ...RULES.map((r) => r.name)];
    for (const name of named)
      expect(
        ARCHES.some((arch) => SYSCALLS[arch][name] !== undefined),
        name,
      ).toBe(true);
    const allowed = ALLOWED.flatMap((g) => g.names);
    expect(new Set(allowed).size, 'a name listed twice').toBe(allowed.length);
    for (const { name } of REMOVED) expect(RUN_POLICY.allow.has(name), name).toBe(false);
  });
});

describe('the syscall filter', () => {
  it('is 8 little-endian bytes per instruction, starting with a load of the arch word', () => {
    expect(prog.length % 8).toBe(0);
    expect([...prog.subarray(0, 8)]).toEqual([0x20, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00]);
    // The last instruction kills: a call under an arch the filter does not know.
    expect(prog.readUInt16LE(prog.length - 8)).toBe(0x06);
    expect(prog.readUInt32LE(prog.length - 4)).toBe(RET_KILL_PROCESS);
  });

  for (const arch of ARCHES) {
    const run = (name: string, args: number[] = []): number => simulate(prog, record(AUDIT_ARCH[arch], nr(name, arch), args));
    const at = (n: number): number => simulate(prog, record(AUDIT_ARCH[arch], n));
    describe(arch, () => {
      it('an allowlist: each allowed call passes, every other call of the table is EPERM', () => {
        const answers: string[] = [];
        const expected: string[] = [];
        for (const name of Object.keys(SYSCALLS[arch])) {
          if (ruled.has(name)) continue;
          answers.push(`${name} ${hex(run(name))}`);
          expected.push(`${name} ${hex(RUN_POLICY.allow.has(name) ? RET_ALLOW : retErrno(EPERM))}`);
        }
        expect(answers).toEqual(expected);
        // What python, node, pip and npm start with passes.
        for (const name of ['read', 'write', 'openat', 'mmap', 'execve', 'futex', 'rseq', 'getrandom', 'statx', 'epoll_pwait'])
          expect(`${name} ${hex(run(name))}`).toBe(`${name} ${hex(RET_ALLOW)}`);
      });

      it('attack: memfd_secret, open_by_handle_at, name_to_handle_at and kcmp are EPERM; so are the calls the deny list named (keyrings, io_uring, bpf, mount, ptrace, ...)', () => {
        const named = ['memfd_secret', 'open_by_handle_at', 'name_to_handle_at', 'kcmp'];
        const former = ['keyctl', 'add_key', 'request_key', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'bpf'];
        const more = ['perf_event_open', 'userfaultfd', 'kexec_load', 'init_module', 'finit_module', 'mount', 'umount2', 'pivot_root'];
        const rest = ['open_tree', 'fsopen', 'mount_setattr', 'open_tree_attr', 'unshare', 'setns', 'ptrace', 'process_vm_readv'];
        for (const name of [...named, ...former, ...more, ...rest, 'pidfd_getfd', 'listns'].filter((n) => SYSCALLS[arch][n] !== undefined))
          expect(`${name} ${hex(run(name))}`).toBe(`${name} ${hex(retErrno(EPERM))}`);
        if (arch === 'x86_64') expect(run('modify_ldt')).toBe(retErrno(EPERM));
      });

      it('attack: a number the table does not know is ENOSYS — a hole in the table, the next number after it, and far past it', () => {
        const known = new Set(Object.values(SYSCALLS[arch]));
        const last = Math.max(...known);
        const holes = Array.from({ length: last }, (_, n) => n).filter((n) => !known.has(n));
        expect(holes.length).toBeGreaterThan(10);
        for (const n of [...holes, last + 1, last + 2, 1000, 0x3fffffff])
          expect(`${n} ${hex(at(n))}`).toBe(`${n} ${hex(retErrno(ENOSYS))}`);
        expect(run('clone3')).toBe(retErrno(ENOSYS));
      });

      it('sockets: unix, IPv4, IPv6 and route netlink pass; AF_VSOCK, AF_PACKET, other netlink and socketpair(AF_VSOCK) are EPERM', () => {
        for (const family of [AF_UNIX, AF_INET, AF_INET6]) expect(run('socket', [family, 1, 0])).toBe(RET_ALLOW);
        expect(run('socket', [16, 3, 0])).toBe(RET_ALLOW);
        expect(run('socket', [16, 3, 12])).toBe(retErrno(EPERM));
        for (const family of [40, 17, 38, 31, 0]) expect(run('socket', [family, 1, 0])).toBe(retErrno(EPERM));
        // The kernel reads the family as an int: high bits set do not change what it sees.
        expect(run('socket', [0x1_0000_0028, 1, 0])).toBe(retErrno(EPERM));
        expect(run('socketpair', [AF_UNIX, 1, 0])).toBe(RET_ALLOW);
        expect(run('socketpair', [40, 1, 0])).toBe(retErrno(EPERM));
        expect(run('socketpair', [16, 3, 0])).toBe(retErrno(EPERM));
      });

      it('clone: namespace flags are EPERM, fork and threads pass; unshare is EPERM whatever its flags', () => {
        expect(run('clone', [17])).toBe(RET_ALLOW); // fork: SIGCHLD
        expect(run('clone', [0x003d0f00])).toBe(RET_ALLOW); // glibc's pthread_create flags
        for (const flag of [0x10000000, 0x20000000, 0x40000000, 0x00020000, 0x08000000, 0x04000000, 0x02000000])
          expect(run('clone', [flag | 17])).toBe(retErrno(EPERM));
        for (const flags of [0x400, 0x80, 0x10000000]) expect(run('unshare', [flags])).toBe(retErrno(EPERM));
      });

      it('personality: only the query and PER_LINUX pass', () => {
        expect(run('personality', [0xffffffff])).toBe(RET_ALLOW);
        expect(run('personality', [0])).toBe(RET_ALLOW);
        expect(run('personality', [0x0040000])).toBe(retErrno(EPERM));
      });

      it('prctl: the parent-death signal may only be SIGKILL; every other option passes', () => {
        expect(run('prctl', [1, 0])).toBe(retErrno(EPERM)); // PR_SET_PDEATHSIG, cleared
        expect(run('prctl', [1, 15])).toBe(retErrno(EPERM)); // SIGTERM: pid 1 of a namespace ignores it
        expect(run('prctl', [1, 9])).toBe(RET_ALLOW);
        expect(run('prctl', [2, 0])).toBe(RET_ALLOW); // PR_GET_PDEATHSIG
        expect(run('prctl', [15, 0])).toBe(RET_ALLOW); // PR_SET_NAME
        expect(run('prctl', [38, 1])).toBe(RET_ALLOW); // PR_SET_NO_NEW_PRIVS
      });
    });
  }

  it('a foreign ABI is killed: i386 (socketcall hides the family), arm32, and x32 numbers on x86_64', () => {
    expect(simulate(prog, record(0x40000003, 102))).toBe(RET_KILL_PROCESS);
    expect(simulate(prog, record(0x40000028, 281))).toBe(RET_KILL_PROCESS);
    expect(simulate(prog, record(AUDIT_ARCH.x86_64, 0x40000000 | 41, [40]))).toBe(RET_KILL_PROCESS);
    expect(simulate(prog, record(AUDIT_ARCH.x86_64, 0x40000000 | 0))).toBe(RET_KILL_PROCESS);
  });

  it('a one-arch program gives the same answers for its arch, for every number', () => {
    for (const arch of ARCHES) {
      const one = encodeFilter(buildFilter(RUN_POLICY, [arch]));
      expect(one.length).toBeLessThan(prog.length);
      for (let n = 0; n < 600; n++)
        expect(simulate(one, record(AUDIT_ARCH[arch], n, [40]))).toBe(simulate(prog, record(AUDIT_ARCH[arch], n, [40])));
      expect(simulate(one, record(AUDIT_ARCH[arch === 'x86_64' ? 'aarch64' : 'x86_64'], 0))).toBe(RET_KILL_PROCESS);
    }
  });

  it('a search tree too wide for a byte jump goes through ja and still answers every number rightly (every other call allowed)', () => {
    const names = Object.keys(SYSCALLS.x86_64);
    const policy: FilterPolicy = { allow: new Set(names.filter((_, i) => i % 2 === 0)), rules: [] };
    expect(stretches('x86_64', policy).length).toBeGreaterThan(300);
    const insns = buildFilter(policy, ['x86_64']);
    expect(insns.some((i) => i.code === 0x05)).toBe(true);
    const wide = encodeFilter(insns);
    for (const [name, n] of Object.entries(SYSCALLS.x86_64))
      expect(`${name} ${hex(simulate(wide, record(AUDIT_ARCH.x86_64, n)))}`).toBe(
        `${name} ${hex(policy.allow.has(name) ? RET_ALLOW : retErrno(EPERM))}`,
      );
    expect(simulate(wide, record(AUDIT_ARCH.x86_64, 999))).toBe(retErrno(ENOSYS));
  });

  it('where no memory cgroup counts pages, shmget is EPERM (System V shm bounded by nothing else); with one it passes; the rest is the same', () => {
    for (const arch of ARCHES) {
      const without = encodeFilter(buildFilter(runPolicy(false), [arch]));
      const withGroup = encodeFilter(buildFilter(runPolicy(true), [arch]));
      expect(simulate(without, record(AUDIT_ARCH[arch], nr('shmget', arch)))).toBe(retErrno(EPERM));
      expect(simulate(withGroup, record(AUDIT_ARCH[arch], nr('shmget', arch)))).toBe(RET_ALLOW);
      for (const name of ['shmat', 'shmdt', 'shmctl', 'semget', 'msgget', 'mmap'])
        expect(simulate(without, record(AUDIT_ARCH[arch], nr(name, arch)))).toBe(RET_ALLOW);
    }
    expect(runPolicy(true)).toBe(RUN_POLICY);
  });

  it('the program for this runner stays small: one arch, under 400 instructions', () => {
    expect(buildFilter(RUN_POLICY, ['x86_64']).length).toBeLessThan(400);
    expect(buildFilter(RUN_POLICY, ['aarch64']).length).toBeLessThan(400);
  });

  it('refuses to build a program whose jumps would not fit in a byte', () => {
    const wide: FilterPolicy = {
      allow: new Set(),
      rules: [
        {
          name: 'socket',
          rule: { kind: 'socket', errno: EPERM, families: Array.from({ length: 300 }, (_, i) => i), netlink: [] },
          why: 'test',
        },
      ],
    };
    expect(() => buildFilter(wide)).toThrow(/jumps out of range/);
  });
});
