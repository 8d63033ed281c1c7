/**
 * The syscall filter's table and generator (runner/sandbox/seccomp-policy.ts, seccomp-bpf.ts):
 * every syscall number checked against libseccomp's own table (`scmp_sys_resolver`, Debian package
 * `seccomp`), the bytes checked by layout, and the program run in a classic-BPF interpreter written
 * here from the kernel's definition of the instructions it may use, on seccomp_data records built
 * here. The kernel running it is tested by real runs (kernel-attacks.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildFilter, encodeFilter, RET_ALLOW, RET_KILL_PROCESS, retErrno } from '../../runner/sandbox/seccomp-bpf.js';
import { AF_INET, AF_INET6, AF_UNIX, AUDIT_ARCH, ENOSYS, EPERM, SYSCALL_RULES } from '../../runner/sandbox/seccomp-policy.js';
import type { Arch } from '../../runner/sandbox/seccomp-policy.js';

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

const nr = (name: string, arch: Arch): number => SYSCALL_RULES.find((r) => r.name === name)!.nr[arch];
const prog = encodeFilter(buildFilter(SYSCALL_RULES));

describe('the syscall filter', () => {
  it.skipIf(!resolver)("every syscall number is libseccomp's, on x86_64 and aarch64", () => {
    for (const rule of SYSCALL_RULES) {
      for (const arch of ['x86_64', 'aarch64'] as const) {
        const known = Number(execFileSync('scmp_sys_resolver', ['-a', arch, rule.name], { encoding: 'utf8' }).trim());
        // libseccomp 2.5.4 predates open_tree_attr (Linux 6.15: 467 in the generic table on both).
        if (known === -1 && rule.name === 'open_tree_attr') continue;
        expect(`${arch} ${rule.name} ${rule.nr[arch]}`).toBe(`${arch} ${rule.name} ${known}`);
      }
    }
  });

  it('is 8 little-endian bytes per instruction, starting with a load of the arch word', () => {
    expect(prog.length % 8).toBe(0);
    expect([...prog.subarray(0, 8)]).toEqual([0x20, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00]);
    // The last instruction kills: a call under an arch the filter does not know.
    expect(prog.readUInt16LE(prog.length - 8)).toBe(0x06);
    expect(prog.readUInt32LE(prog.length - 4)).toBe(RET_KILL_PROCESS);
  });

  for (const arch of ['x86_64', 'aarch64'] as const) {
    const run = (name: string, args: number[] = []): number => simulate(prog, record(AUDIT_ARCH[arch], nr(name, arch), args));
    describe(arch, () => {
      it('denies every unconditional row with EPERM, clone3 with ENOSYS', () => {
        for (const rule of SYSCALL_RULES.filter((r) => r.rule.kind === 'deny')) {
          expect(`${rule.name} ${run(rule.name).toString(16)}`).toBe(
            `${rule.name} ${retErrno(rule.name === 'clone3' ? ENOSYS : EPERM).toString(16)}`,
          );
        }
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

      it('clone and unshare: namespace flags are EPERM, fork, threads and CLONE_FILES pass', () => {
        expect(run('clone', [17])).toBe(RET_ALLOW); // fork: SIGCHLD
        expect(run('clone', [0x003d0f00])).toBe(RET_ALLOW); // glibc's pthread_create flags
        for (const flag of [0x10000000, 0x20000000, 0x40000000, 0x00020000, 0x08000000, 0x04000000, 0x02000000])
          expect(run('clone', [flag | 17])).toBe(retErrno(EPERM));
        expect(run('unshare', [0x400])).toBe(RET_ALLOW);
        expect(run('unshare', [0x80])).toBe(retErrno(EPERM)); // CLONE_NEWTIME
        expect(run('unshare', [0x10000000])).toBe(retErrno(EPERM));
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

      it('everything not named passes (read, write, openat, mmap, execve)', () => {
        const others = arch === 'x86_64' ? [0, 1, 257, 9, 59] : [63, 64, 56, 222, 221];
        for (const n of others) expect(simulate(prog, record(AUDIT_ARCH[arch], n))).toBe(RET_ALLOW);
      });
    });
  }

  it('a foreign ABI is killed: i386 (socketcall hides the family), arm32, and x32 numbers on x86_64', () => {
    expect(simulate(prog, record(0x40000003, 102))).toBe(RET_KILL_PROCESS);
    expect(simulate(prog, record(0x40000028, 281))).toBe(RET_KILL_PROCESS);
    expect(simulate(prog, record(AUDIT_ARCH.x86_64, 0x40000000 | 41, [40]))).toBe(RET_KILL_PROCESS);
  });

  it('a one-arch program gives the same answers for its arch', () => {
    const x86 = encodeFilter(buildFilter(SYSCALL_RULES, ['x86_64']));
    expect(x86.length).toBeLessThan(prog.length);
    for (const rule of SYSCALL_RULES)
      expect(simulate(x86, record(AUDIT_ARCH.x86_64, rule.nr.x86_64, [40]))).toBe(
        simulate(prog, record(AUDIT_ARCH.x86_64, rule.nr.x86_64, [40])),
      );
    expect(simulate(x86, record(AUDIT_ARCH.aarch64, 0))).toBe(RET_KILL_PROCESS);
  });

  it('refuses to build a program whose jumps would not fit in a byte', () => {
    const wide = [
      {
        name: 'socket',
        nr: { x86_64: 41, aarch64: 198 },
        rule: { kind: 'socket' as const, errno: EPERM, families: Array.from({ length: 300 }, (_, i) => i), netlink: [] },
        why: 'test',
      },
    ];
    expect(() => buildFilter(wide)).toThrow(/jumps out of range/);
  });
});
