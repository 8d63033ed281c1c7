/**
 * @module The syscall filter's policy as data (docs/isolation.md, "The syscall filter"): which
 * calls a script may not make, with what answer, and their numbers on the two architectures the
 * runner supports. Pure: the BPF generator (seccomp-bpf.ts) turns it into a program, and the
 * tests check every number against libseccomp's own table (scmp_sys_resolver).
 *
 * Everything not named here is allowed: this is a deny list over the kernel interfaces a script
 * never needs and that carry most of the kernel's attack surface or reach past the sandbox, not
 * an allow list of what interpreters use (that would break on every new libc or runtime).
 * Every denial answers EPERM (clone3: ENOSYS), never a kill: a script that tries fails cleanly
 * and says why in its own error.
 */

export type Arch = 'x86_64' | 'aarch64';

/** `AUDIT_ARCH_*` as the kernel writes it into `seccomp_data.arch`. */
export const AUDIT_ARCH: Record<Arch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };

/** On x86_64, syscall numbers with this bit set are the x32 ABI: a second table the filter would not see. */
export const X32_SYSCALL_BIT = 0x40000000;

export const EPERM = 1;
export const ENOSYS = 38;

export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const NETLINK_ROUTE = 0;

/** Every CLONE_NEW* flag clone(2) accepts in its flags word (CLONE_NEWTIME's bit is the exit signal there). */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** unshare(2) also takes CLONE_NEWTIME (0x80). */
export const UNSHARE_NAMESPACE_FLAGS = CLONE_NAMESPACE_FLAGS | 0x00000080;

/** personality(2) values that change nothing: PER_LINUX and the query 0xffffffff. */
export const PERSONALITY_ALLOWED = [0, 0xffffffff];

/** prctl(2)'s option that sets the signal a process gets when its parent dies. */
export const PR_SET_PDEATHSIG = 1;
export const SIGKILL = 9;

/**
 * What happens to one syscall. `deny`: always the errno. `flags`: the errno when arg0 has any bit
 * of `mask`. `socket`: the errno unless arg0 (the address family) is in `families`, or is
 * AF_NETLINK with arg2 (the protocol) in `netlink`. `only`: the errno unless arg0 is one of `values`.
 * `option`: the errno when arg0 is `option` and arg1 is not one of `values` (other options pass).
 */
export type Rule =
  | { kind: 'deny'; errno: number }
  | { kind: 'flags'; errno: number; mask: number }
  | { kind: 'socket'; errno: number; families: number[]; netlink: number[] }
  | { kind: 'only'; errno: number; values: number[] }
  | { kind: 'option'; errno: number; option: number; values: number[] };

export interface SyscallRule {
  name: string;
  nr: Record<Arch, number>;
  rule: Rule;
  /** Why it is denied, in words (docs/isolation.md repeats these). */
  why: string;
}

const deny: Rule = { kind: 'deny', errno: EPERM };
const same = (n: number): Record<Arch, number> => ({ x86_64: n, aarch64: n });

// Security: each row closes one way out of the sandbox or one large piece of kernel attack surface.
export const SYSCALL_RULES: readonly SyscallRule[] = [
  {
    name: 'keyctl',
    nr: { x86_64: 250, aarch64: 219 },
    rule: deny,
    why: 'kernel keyrings are not namespaced: a script could read or plant keys of the session or uid keyring',
  },
  { name: 'add_key', nr: { x86_64: 248, aarch64: 217 }, rule: deny, why: 'kernel keyrings (as keyctl)' },
  {
    name: 'request_key',
    nr: { x86_64: 249, aarch64: 218 },
    rule: deny,
    why: 'kernel keyrings (as keyctl); it can also start a host-side upcall',
  },
  {
    name: 'socket',
    nr: { x86_64: 41, aarch64: 198 },
    rule: { kind: 'socket', errno: EPERM, families: [AF_UNIX, AF_INET, AF_INET6], netlink: [NETLINK_ROUTE] },
    why: 'only unix, IPv4 and IPv6 sockets, plus route netlink (glibc getifaddrs, Node os.networkInterfaces); not AF_VSOCK (host services of a VM), AF_PACKET, AF_BLUETOOTH, AF_ALG or other netlink protocols',
  },
  {
    name: 'socketpair',
    nr: { x86_64: 53, aarch64: 199 },
    rule: { kind: 'socket', errno: EPERM, families: [AF_UNIX, AF_INET, AF_INET6], netlink: [] },
    why: 'as socket',
  },
  {
    name: 'io_uring_setup',
    nr: same(425),
    rule: deny,
    why: 'io_uring performs socket, open and other calls the filter never sees, and is a large source of kernel bugs',
  },
  { name: 'io_uring_enter', nr: same(426), rule: deny, why: 'as io_uring_setup' },
  { name: 'io_uring_register', nr: same(427), rule: deny, why: 'as io_uring_setup' },
  { name: 'bpf', nr: { x86_64: 321, aarch64: 280 }, rule: deny, why: 'eBPF programs and maps: kernel attack surface no script needs' },
  {
    name: 'perf_event_open',
    nr: { x86_64: 298, aarch64: 241 },
    rule: deny,
    why: 'performance counters can observe other processes and have a long CVE history',
  },
  {
    name: 'userfaultfd',
    nr: { x86_64: 323, aarch64: 282 },
    rule: deny,
    why: 'stalls kernel page faults at will: the usual tool to win kernel races',
  },
  { name: 'kexec_load', nr: { x86_64: 246, aarch64: 104 }, rule: deny, why: 'loads a new kernel' },
  { name: 'kexec_file_load', nr: { x86_64: 320, aarch64: 294 }, rule: deny, why: 'loads a new kernel' },
  { name: 'init_module', nr: { x86_64: 175, aarch64: 105 }, rule: deny, why: 'loads kernel code' },
  { name: 'finit_module', nr: { x86_64: 313, aarch64: 273 }, rule: deny, why: 'loads kernel code' },
  { name: 'delete_module', nr: { x86_64: 176, aarch64: 106 }, rule: deny, why: 'unloads kernel code' },
  { name: 'mount', nr: { x86_64: 165, aarch64: 40 }, rule: deny, why: 'changes the file-system view the sandbox built' },
  { name: 'umount2', nr: { x86_64: 166, aarch64: 39 }, rule: deny, why: 'would uncover what a read-only mount hides' },
  { name: 'pivot_root', nr: { x86_64: 155, aarch64: 41 }, rule: deny, why: 'changes the root' },
  { name: 'open_tree', nr: same(428), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'move_mount', nr: same(429), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'fsopen', nr: same(430), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'fsconfig', nr: same(431), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'fsmount', nr: same(432), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'fspick', nr: same(433), rule: deny, why: 'the new mount API (as mount)' },
  { name: 'mount_setattr', nr: same(442), rule: deny, why: 'the new mount API: could clear a read-only flag' },
  { name: 'open_tree_attr', nr: same(467), rule: deny, why: 'the new mount API (Linux 6.15)' },
  {
    name: 'unshare',
    nr: { x86_64: 272, aarch64: 97 },
    rule: { kind: 'flags', errno: EPERM, mask: UNSHARE_NAMESPACE_FLAGS },
    why: 'new namespaces (a user namespace hands its maker every capability over it); CLONE_FILES and CLONE_FS stay allowed',
  },
  { name: 'setns', nr: { x86_64: 308, aarch64: 268 }, rule: deny, why: 'joins another namespace' },
  {
    name: 'clone',
    nr: { x86_64: 56, aarch64: 220 },
    rule: { kind: 'flags', errno: EPERM, mask: CLONE_NAMESPACE_FLAGS },
    why: 'new namespaces through clone; threads and fork are untouched',
  },
  {
    name: 'clone3',
    nr: same(435),
    rule: { kind: 'deny', errno: ENOSYS },
    why: 'its flags sit in a struct the filter cannot read; ENOSYS makes glibc and runtimes fall back to clone, whose flags it can',
  },
  {
    name: 'ptrace',
    nr: { x86_64: 101, aarch64: 117 },
    rule: deny,
    why: "at the levels without a pid namespace a script could trace the person's or the runner's other processes of its uid",
  },
  { name: 'process_vm_readv', nr: { x86_64: 310, aarch64: 270 }, rule: deny, why: "reads another process's memory (as ptrace)" },
  { name: 'process_vm_writev', nr: { x86_64: 311, aarch64: 271 }, rule: deny, why: "writes another process's memory (as ptrace)" },
  { name: 'pidfd_getfd', nr: same(438), rule: deny, why: 'takes a file descriptor out of another process (as ptrace)' },
  {
    name: 'personality',
    nr: { x86_64: 135, aarch64: 92 },
    rule: { kind: 'only', errno: EPERM, values: PERSONALITY_ALLOWED },
    why: 'ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC would switch off ASLR and NX for what the script starts; querying stays allowed',
  },
  {
    name: 'prctl',
    nr: { x86_64: 157, aarch64: 167 },
    rule: { kind: 'option', errno: EPERM, option: PR_SET_PDEATHSIG, values: [SIGKILL] },
    why: "the parent-death signal is what ends a run whose sandbox parent dies (bubblewrap's pid 1, a script started by setpriv): cleared, or set to a signal pid 1 ignores, the script would outlive a killed runner. Setting it to SIGKILL, and every other option, stays allowed",
  },
];

/** The arch of this process as the filter names it, or undefined where the runner has no filter. */
export function hostArch(nodeArch: string = process.arch): Arch | undefined {
  if (nodeArch === 'x64') return 'x86_64';
  if (nodeArch === 'arm64') return 'aarch64';
  return undefined;
}
