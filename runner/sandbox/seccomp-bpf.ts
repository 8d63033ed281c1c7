/**
 * @module The syscall filter as a classic BPF program (docs/isolation.md, "The syscall filter"):
 * a small, pure generator from the policy table (seccomp-policy.ts) to the bytes the kernel and
 * bubblewrap's `--seccomp FD` take — `struct sock_filter` entries of 8 bytes each (u16 code, u8 jt,
 * u8 jf, u32 k), little-endian, as both supported architectures are.
 *
 * Layout: load `seccomp_data.arch`; for each known arch, a block that loads the syscall number,
 * kills an x32 number (x86_64), and finds the number's answer by a binary search over stretches of
 * numbers that answer alike (allow, EPERM, ENOSYS, or a row's body, which reads arguments); after
 * the last arch, kill. Every jump is forward; one that does not fit in a byte goes through `ja`, and
 * the generator refuses any offset that lands outside the program instead of producing a program
 * that would jump somewhere else.
 */
import { AF_NETLINK, AUDIT_ARCH, ENOSYS, EPERM, SYSCALLS, X32_SYSCALL_BIT } from './seccomp-policy.js';
import type { Arch, FilterPolicy, Rule } from './seccomp-policy.js';

/** One `struct sock_filter`. */
export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

// Opcodes (linux/filter.h, linux/bpf_common.h).
export const LD_W_ABS = 0x20;
export const JEQ_K = 0x15;
export const JGE_K = 0x35;
export const JSET_K = 0x45;
export const JA = 0x05;
export const RET_K = 0x06;

// Return values (linux/seccomp.h).
export const RET_KILL_PROCESS = 0x80000000;
export const RET_ALLOW = 0x7fff0000;
export const retErrno = (errno: number): number => (0x00050000 | (errno & 0xffff)) >>> 0;

// Offsets into struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }: the low word of an
// argument on a little-endian machine. Every argument inspected here is an int or its flags fit in it.
const OFF_NR = 0;
const OFF_ARCH = 4;
const argLow = (i: number): number => 16 + 8 * i;

const ld = (k: number): Insn => ({ code: LD_W_ABS, jt: 0, jf: 0, k });
const ret = (k: number): Insn => ({ code: RET_K, jt: 0, jf: 0, k: k >>> 0 });
const jeq = (k: number, jt: number, jf: number): Insn => ({ code: JEQ_K, jt, jf, k: k >>> 0 });

/** The instructions that decide one matched syscall (the accumulator holds nothing useful on entry). */
function ruleBody(rule: Rule): Insn[] {
  const errno = ret(retErrno(rule.errno));
  switch (rule.kind) {
    case 'deny':
      return [errno];
    case 'flags':
      // jset: any bit of the mask set → the errno (next), else allow (skip one).
      return [ld(argLow(0)), { code: JSET_K, jt: 0, jf: 1, k: rule.mask >>> 0 }, errno, ret(RET_ALLOW)];
    case 'option': {
      // Layout: ld arg0; jeq option (miss → the allow at the end); ld arg1; one jeq per allowed
      // value (hit → that allow); errno; allow.
      const out: Insn[] = [ld(argLow(0)), jeq(rule.option, 0, rule.values.length + 2), ld(argLow(1))];
      for (const [i, v] of rule.values.entries()) out.push(jeq(v, rule.values.length - i, 0));
      out.push(errno, ret(RET_ALLOW));
      return out;
    }
    case 'only':
    case 'socket': {
      const values = rule.kind === 'only' ? rule.values : rule.families;
      const netlink = rule.kind === 'socket' ? rule.netlink : [];
      // Layout: ld arg0; one jeq per allowed value (hit → the allow at the end); [netlink: jeq
      // AF_NETLINK → ld arg2; one jeq per protocol → allow]; errno; allow.
      const tail: Insn[] = [];
      if (netlink.length > 0) {
        tail.push(ld(argLow(2)));
        for (const [i, p] of netlink.entries()) tail.push(jeq(p, netlink.length - i, 0));
      }
      const out: Insn[] = [ld(argLow(0))];
      for (const [i, v] of values.entries()) out.push(jeq(v, values.length - i + (netlink.length > 0 ? 1 : 0) + tail.length, 0));
      if (netlink.length > 0) out.push(jeq(AF_NETLINK, 0, tail.length));
      out.push(...tail, errno, ret(RET_ALLOW));
      return out;
    }
  }
}

/** One stretch of syscall numbers that get the same answer: a return value, or one row's body. */
interface Stretch {
  from: number;
  answer: { ret: number } | { rule: Rule };
}

/**
 * What each number of `arch` answers, as stretches in number order from 0: a call in the
 * allowlist passes, a call with a row gets its body, every other call of the table EPERM, and a
 * number the table does not know — a hole, or past its last call — ENOSYS (the last stretch runs to
 * the end of the number space).
 */
export function stretches(arch: Arch, policy: FilterPolicy): Stretch[] {
  const byNr = new Map<number, Stretch['answer']>();
  const rows = new Map(policy.rules.map((r) => [r.name, r.rule]));
  for (const [name, nr] of Object.entries(SYSCALLS[arch])) {
    const rule = rows.get(name);
    byNr.set(nr, rule ? { rule } : { ret: policy.allow.has(name) ? RET_ALLOW : retErrno(EPERM) });
  }
  const last = Math.max(...byNr.keys());
  const out: Stretch[] = [];
  for (let nr = 0; nr <= last + 1; nr++) {
    const answer = byNr.get(nr) ?? { ret: retErrno(ENOSYS) };
    const previous = out.at(-1);
    // Rows are never merged (each reads its own call's arguments); equal returns are.
    if (previous && 'ret' in previous.answer && 'ret' in answer && previous.answer.ret === answer.ret) continue;
    out.push({ from: nr, answer });
  }
  return out;
}

/**
 * A binary search over the stretches on the number in the accumulator: each node is one `jge`
 * (the upper half's first number), the lower half laid out right after it and the upper half after
 * that, so every jump is forward. A jump past 255 goes through a `ja` (32-bit offset). Depth
 * log2(stretches): about 8 comparisons per call on x86_64.
 */
function searchTree(list: readonly Stretch[]): Insn[] {
  if (list.length === 1) {
    const { answer } = list[0]!;
    return 'ret' in answer ? [ret(answer.ret)] : ruleBody(answer.rule);
  }
  const mid = list.length >> 1;
  const lower = searchTree(list.slice(0, mid));
  const upper = searchTree(list.slice(mid));
  const k = list[mid]!.from;
  if (lower.length <= 255) return [{ code: JGE_K, jt: lower.length, jf: 0, k }, ...lower, ...upper];
  return [{ code: JGE_K, jt: 0, jf: 1, k }, { code: JA, jt: 0, jf: 0, k: lower.length }, ...lower, ...upper];
}

/** The block of one arch, entered with the arch word in the accumulator already matched. */
function archBlock(arch: Arch, policy: FilterPolicy): Insn[] {
  const out: Insn[] = [ld(OFF_NR)];
  // Security: the x32 ABI reaches the same kernel calls under other numbers; a filter written for
  // the x86_64 table would not see them.
  if (arch === 'x86_64') out.push({ code: JGE_K, jt: 0, jf: 1, k: X32_SYSCALL_BIT }, ret(RET_KILL_PROCESS));
  out.push(...searchTree(stretches(arch, policy)));
  return out;
}

/**
 * The whole program. Security: a syscall made under any other arch (i386 via int 0x80 on x86_64,
 * arm32 on aarch64) kills the process, since its numbers mean different calls and it has
 * socketcall(2), which hides the socket family from the filter.
 */
export function buildFilter(policy: FilterPolicy, arches: readonly Arch[] = ['x86_64', 'aarch64']): Insn[] {
  const out: Insn[] = [ld(OFF_ARCH)];
  for (const arch of arches) {
    const block = archBlock(arch, policy);
    // Past 255 the arch test's miss goes through a ja as well.
    if (block.length <= 255) out.push(jeq(AUDIT_ARCH[arch], 0, block.length), ...block);
    else out.push(jeq(AUDIT_ARCH[arch], 1, 0), { code: JA, jt: 0, jf: 0, k: block.length }, ...block);
  }
  out.push(ret(RET_KILL_PROCESS));
  // Security: a jump that does not fit, or lands past the end, would be a different program.
  for (const [i, insn] of out.entries()) {
    if (insn.code === RET_K) continue;
    const reach = insn.code === JA ? insn.k : Math.max(insn.jt, insn.jf);
    if (insn.jt > 255 || insn.jf > 255 || i + 1 + reach >= out.length)
      throw new Error(`seccomp filter: instruction ${i} jumps out of range`);
  }
  // The kernel's limit is 4096 instructions (BPF_MAXINSNS).
  if (out.length > 4096) throw new Error(`seccomp filter: ${out.length} instructions is over the kernel's limit`);
  return out;
}

/** The program as the kernel reads it: 8 little-endian bytes per instruction. */
export function encodeFilter(insns: readonly Insn[]): Buffer {
  const buf = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    buf.writeUInt16LE(insn.code, i * 8);
    buf.writeUInt8(insn.jt, i * 8 + 2);
    buf.writeUInt8(insn.jf, i * 8 + 3);
    buf.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return buf;
}
