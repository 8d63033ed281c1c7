/**
 * @module The syscall filter's policy as data (docs/isolation.md, "The syscall filter"): which
 * calls a script may make, which only with some arguments, and what every other call answers. Pure:
 * the BPF generator (seccomp-bpf.ts) turns it into a program; the numbers come from the generated
 * table (seccomp-table.ts), which the tests check against libseccomp's own (scmp_sys_resolver).
 *
 * An allowlist, modelled on Docker's default profile (moby/profiles, seccomp/default.json: its
 * unconditional list, and its x86_64-only arch_prctl): a call in {@link ALLOWED} passes; a call
 * with a row in {@link RULES} gets that row's answer; every other call the table knows answers
 * EPERM; a number the table does not know (an unassigned one, or a call newer than the table)
 * answers ENOSYS, so libc and runtimes take their fallback as for an old kernel (as runc answers
 * clone3). Never a kill: a script that tries fails cleanly and says why in its own error.
 *
 * Against Docker's list: four calls are left out ({@link REMOVED}), the calls Docker allows only
 * with a capability stay out, and socket, socketpair, clone, personality and prctl are narrowed
 * by argument ({@link RULES}). Nothing was added: python and node start-up, pip and npm installs,
 * the test skills and the anthropics/skills pdf and docx scripts make no call outside the list
 * (strace -f of each, docs/isolation.md). An addition needs a row with its reason in ALLOWED.
 */
import type { Arch } from './seccomp-arch.js';
import { SYSCALL_NUMBERS } from './seccomp-table.js';

export type { Arch } from './seccomp-arch.js';
export { AUDIT_ARCH, hostArch } from './seccomp-arch.js';

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

/** personality(2) values that change nothing: PER_LINUX and the query 0xffffffff. */
export const PERSONALITY_ALLOWED = [0, 0xffffffff];

/** prctl(2)'s option that sets the signal a process gets when its parent dies. */
export const PR_SET_PDEATHSIG = 1;
export const SIGKILL = 9;

/** Every syscall of each arch by name (seccomp-table.ts, generated). */
export const SYSCALLS: Record<Arch, Readonly<Record<string, number>>> = SYSCALL_NUMBERS;

/**
 * What happens to one syscall with a row of its own. `deny`: always the errno. `flags`: the errno
 * when arg0 has any bit of `mask`. `socket`: the errno unless arg0 (the address family) is in
 * `families`, or is AF_NETLINK with arg2 (the protocol) in `netlink`. `only`: the errno unless arg0
 * is one of `values`. `option`: the errno when arg0 is `option` and arg1 is not one of `values`
 * (other options pass).
 */
export type Rule =
  | { kind: 'deny'; errno: number }
  | { kind: 'flags'; errno: number; mask: number }
  | { kind: 'socket'; errno: number; families: number[]; netlink: number[] }
  | { kind: 'only'; errno: number; values: number[] }
  | { kind: 'option'; errno: number; option: number; values: number[] };

export interface SyscallRule {
  name: string;
  rule: Rule;
  /** Why, in words (docs/isolation.md repeats these). */
  why: string;
}

export interface AllowGroup {
  /** Calls allowed outright (a name an arch lacks is simply absent there). */
  names: readonly string[];
  why: string;
}

/**
 * Allowed outright: Docker's default list on x86_64 and aarch64, less {@link REMOVED}, grouped by
 * what they are for. None reaches past the sandbox's namespaces and mounts; what needs a privilege
 * (mknod of a device, setuid to another uid, raising a hard limit) the kernel still refuses.
 */
export const ALLOWED: readonly AllowGroup[] = [
  {
    why: 'files and folders: open, read, write, seek, stat, list, link, rename, remove, permissions, extended attributes, locks, sync, inotify',
    names: [
      'access',
      'chdir',
      'chmod',
      'chown',
      'close',
      'close_range',
      'copy_file_range',
      'creat',
      'dup',
      'dup2',
      'dup3',
      'faccessat',
      'faccessat2',
      'fadvise64',
      'fallocate',
      'fanotify_mark',
      'fchdir',
      'fchmod',
      'fchmodat',
      'fchmodat2',
      'fchown',
      'fchownat',
      'fcntl',
      'fdatasync',
      'fgetxattr',
      'flistxattr',
      'flock',
      'fremovexattr',
      'fsetxattr',
      'fstat',
      'fstatfs',
      'fsync',
      'ftruncate',
      'futimesat',
      'getcwd',
      'getdents',
      'getdents64',
      'getxattr',
      'getxattrat',
      'inotify_add_watch',
      'inotify_init',
      'inotify_init1',
      'inotify_rm_watch',
      'ioctl',
      'lchown',
      'lgetxattr',
      'link',
      'linkat',
      'listxattr',
      'listxattrat',
      'llistxattr',
      'lremovexattr',
      'lseek',
      'lsetxattr',
      'lstat',
      'mkdir',
      'mkdirat',
      'mknod',
      'mknodat',
      'newfstatat',
      'open',
      'openat',
      'openat2',
      'pread64',
      'preadv',
      'preadv2',
      'pwrite64',
      'pwritev',
      'pwritev2',
      'read',
      'readahead',
      'readlink',
      'readlinkat',
      'readv',
      'removexattr',
      'removexattrat',
      'rename',
      'renameat',
      'renameat2',
      'rmdir',
      'sendfile',
      'setxattr',
      'setxattrat',
      'splice',
      'stat',
      'statfs',
      'statx',
      'symlink',
      'symlinkat',
      'sync',
      'sync_file_range',
      'syncfs',
      'tee',
      'truncate',
      'umask',
      'unlink',
      'unlinkat',
      'utime',
      'utimensat',
      'utimes',
      'vmsplice',
      'write',
      'writev',
    ],
  },
  {
    why: 'asynchronous file I/O of the classic kind (libaio; not io_uring, which stays out)',
    names: ['io_cancel', 'io_destroy', 'io_getevents', 'io_pgetevents', 'io_setup', 'io_submit'],
  },
  {
    why: 'memory: mapping, protection, advice, locking within RLIMIT_MEMLOCK, memfd files, protection keys, sealing',
    names: [
      'brk',
      'cachestat',
      'madvise',
      'map_shadow_stack',
      'membarrier',
      'memfd_create',
      'mincore',
      'mlock',
      'mlock2',
      'mlockall',
      'mmap',
      'mprotect',
      'mremap',
      'mseal',
      'msync',
      'munlock',
      'munlockall',
      'munmap',
      'pkey_alloc',
      'pkey_free',
      'pkey_mprotect',
      'remap_file_pages',
    ],
  },
  {
    why: 'processes and threads: start, run, wait, end, their ids, limits, scheduling and futexes; its own uids and groups (changing them needs a capability the run has not)',
    names: [
      'arch_prctl',
      'capget',
      'capset',
      'execve',
      'execveat',
      'exit',
      'exit_group',
      'fork',
      'futex',
      'futex_requeue',
      'futex_wait',
      'futex_waitv',
      'futex_wake',
      'get_robust_list',
      'get_thread_area',
      'getcpu',
      'getegid',
      'geteuid',
      'getgid',
      'getgroups',
      'getpgid',
      'getpgrp',
      'getpid',
      'getppid',
      'getpriority',
      'getresgid',
      'getresuid',
      'getrlimit',
      'getrusage',
      'getsid',
      'gettid',
      'getuid',
      'ioprio_get',
      'ioprio_set',
      'kill',
      'pidfd_open',
      'pidfd_send_signal',
      'prlimit64',
      'process_mrelease',
      'restart_syscall',
      'rseq',
      'sched_get_priority_max',
      'sched_get_priority_min',
      'sched_getaffinity',
      'sched_getattr',
      'sched_getparam',
      'sched_getscheduler',
      'sched_rr_get_interval',
      'sched_setaffinity',
      'sched_setattr',
      'sched_setparam',
      'sched_setscheduler',
      'sched_yield',
      'set_robust_list',
      'set_thread_area',
      'set_tid_address',
      'setfsgid',
      'setfsuid',
      'setgid',
      'setgroups',
      'setpgid',
      'setpriority',
      'setregid',
      'setresgid',
      'setresuid',
      'setreuid',
      'setrlimit',
      'setsid',
      'setuid',
      'tgkill',
      'times',
      'tkill',
      'uretprobe',
      'vfork',
      'wait4',
      'waitid',
    ],
  },
  {
    why: 'signals',
    names: [
      'pause',
      'rt_sigaction',
      'rt_sigpending',
      'rt_sigprocmask',
      'rt_sigqueueinfo',
      'rt_sigreturn',
      'rt_sigsuspend',
      'rt_sigtimedwait',
      'rt_tgsigqueueinfo',
      'sigaltstack',
      'signalfd',
      'signalfd4',
    ],
  },
  {
    why: 'time, timers, sleeping, waiting on many descriptors, random bytes',
    names: [
      'adjtimex',
      'alarm',
      'clock_adjtime',
      'clock_getres',
      'clock_gettime',
      'clock_nanosleep',
      'epoll_create',
      'epoll_create1',
      'epoll_ctl',
      'epoll_ctl_old',
      'epoll_pwait',
      'epoll_pwait2',
      'epoll_wait',
      'epoll_wait_old',
      'eventfd',
      'eventfd2',
      'getitimer',
      'getrandom',
      'gettimeofday',
      'nanosleep',
      'poll',
      'ppoll',
      'pselect6',
      'select',
      'setitimer',
      'time',
      'timer_create',
      'timer_delete',
      'timer_getoverrun',
      'timer_gettime',
      'timer_settime',
      'timerfd_create',
      'timerfd_gettime',
      'timerfd_settime',
    ],
  },
  {
    why: 'using a socket once made (which families may be made is the socket rule below)',
    names: [
      'accept',
      'accept4',
      'bind',
      'connect',
      'getpeername',
      'getsockname',
      'getsockopt',
      'listen',
      'recvfrom',
      'recvmmsg',
      'recvmsg',
      'sendmmsg',
      'sendmsg',
      'sendto',
      'setsockopt',
      'shutdown',
    ],
  },
  {
    why: 'pipes, POSIX message queues and System V IPC (in the run’s own IPC namespace where it has one)',
    names: [
      'mq_getsetattr',
      'mq_notify',
      'mq_open',
      'mq_timedreceive',
      'mq_timedsend',
      'mq_unlink',
      'msgctl',
      'msgget',
      'msgrcv',
      'msgsnd',
      'pipe',
      'pipe2',
      'semctl',
      'semget',
      'semop',
      'semtimedop',
      'shmat',
      'shmctl',
      'shmdt',
      'shmget',
    ],
  },
  {
    why: 'about the system and the run’s own mounts: uname, sysinfo, listmount/statmount (only the mounts its namespace holds)',
    names: ['listmount', 'statmount', 'sysinfo', 'uname'],
  },
  {
    why: 'restricting itself further: seccomp (a filter only adds to this one) and Landlock',
    names: ['landlock_add_rule', 'landlock_create_ruleset', 'landlock_restrict_self', 'seccomp'],
  },
];

/**
 * In Docker's default profile — its unconditional list, its x86 rows, its Linux 4.8+ row — but not
 * in ours, each with why.
 */
export const REMOVED: readonly { name: string; why: string }[] = [
  {
    name: 'memfd_secret',
    why: 'secret memory is taken out of the kernel’s own mapping and cannot be swapped: nothing a script needs, and a way to pin memory the usual accounting treats apart',
  },
  {
    name: 'name_to_handle_at',
    why: 'file handles name a file by inode past every path check; with open_by_handle_at (CAP_DAC_READ_SEARCH) they opened host files from a container (“shocker”), and alone they leak inode identities',
  },
  {
    name: 'modify_ldt',
    why: 'x86_64: 16-bit segments for Wine and DOS emulators; no script needs them, and the call has had privilege-escalation bugs',
  },
  {
    name: 'ptrace',
    why: "at the levels without a pid namespace a script could trace the person's or the runner's other processes of its uid; no debugger or strace inside a run",
  },
  { name: 'process_vm_readv', why: "reads another process's memory (as ptrace)" },
  { name: 'process_vm_writev', why: "writes another process's memory (as ptrace)" },
];

// Security: each row narrows one call by argument, or gives it another answer than EPERM.
export const RULES: readonly SyscallRule[] = [
  {
    name: 'socket',
    rule: { kind: 'socket', errno: EPERM, families: [AF_UNIX, AF_INET, AF_INET6], netlink: [NETLINK_ROUTE] },
    why: 'only unix, IPv4 and IPv6 sockets, plus route netlink (glibc getifaddrs, Node os.networkInterfaces); not AF_VSOCK (host services of a VM), AF_PACKET, AF_BLUETOOTH, AF_ALG or other netlink protocols',
  },
  {
    name: 'socketpair',
    rule: { kind: 'socket', errno: EPERM, families: [AF_UNIX, AF_INET, AF_INET6], netlink: [] },
    why: 'as socket',
  },
  {
    name: 'clone',
    rule: { kind: 'flags', errno: EPERM, mask: CLONE_NAMESPACE_FLAGS },
    why: 'fork and threads; not new namespaces (a user namespace hands its maker every capability over it)',
  },
  {
    name: 'clone3',
    rule: { kind: 'deny', errno: ENOSYS },
    why: 'its flags sit in a struct the filter cannot read; ENOSYS makes glibc and runtimes fall back to clone, whose flags it can',
  },
  {
    name: 'personality',
    rule: { kind: 'only', errno: EPERM, values: PERSONALITY_ALLOWED },
    why: 'the query and PER_LINUX only: ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC would switch off ASLR and NX for what the script starts',
  },
  {
    name: 'prctl',
    rule: { kind: 'option', errno: EPERM, option: PR_SET_PDEATHSIG, values: [SIGKILL] },
    why: "every option but clearing the parent-death signal or setting another than SIGKILL: that signal ends a run whose sandbox parent dies (bubblewrap's pid 1, a script started by setpriv); cleared, or set to a signal pid 1 ignores, the script would outlive a killed runner",
  },
];

/** What the filter does with each call: the allowlist, the rows, and (implied) EPERM for every other call the table knows. */
export interface FilterPolicy {
  allow: ReadonlySet<string>;
  rules: readonly SyscallRule[];
}

/** The runs' filter where a memory cgroup counts every page: {@link ALLOWED} and {@link RULES}. */
export const RUN_POLICY: FilterPolicy = {
  allow: new Set(ALLOWED.flatMap((group) => group.names)),
  rules: RULES,
};

/**
 * Security: where no memory cgroup counts a run's pages, System V shared memory is bounded by
 * nothing the run has — RLIMIT_DATA does not count it, and a run's IPC namespace cannot be given
 * smaller shmmax/shmall (bubblewrap mounts /proc/sys read-only, and the sysctls are the host's at
 * the levels without one): a script touched 2 GiB of segments under a 256 MiB cap. So making a
 * segment is refused there. POSIX shared memory is a file in /dev/shm, a 16 MiB tmpfs in bubblewrap.
 */
export const SHMGET_REFUSED: SyscallRule = {
  name: 'shmget',
  rule: { kind: 'deny', errno: EPERM },
  why: 'System V shared memory is counted by no cap without a memory cgroup (RLIMIT_DATA leaves it out): refused at the levels that have none',
};

/** The runs' filter: {@link RUN_POLICY}, and where no memory cgroup counts pages, {@link SHMGET_REFUSED}. */
export function runPolicy(memoryCounted: boolean): FilterPolicy {
  return memoryCounted ? RUN_POLICY : { allow: RUN_POLICY.allow, rules: [...RULES, SHMGET_REFUSED] };
}
