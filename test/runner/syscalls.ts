/**
 * @module What the kernel-interface attack scripts share (test/runner/kernel-attacks.test.ts, the
 * kernel build in test/runner/deps.test.ts): whether `keyctl` is here to give the runner a session
 * keyring holding a key, a Python preamble for calling syscalls by number, and one for trying sockets.
 */
import { execFileSync } from 'node:child_process';

/** Whether the `keyctl` command is installed (the keyring attacks need it to plant the runner's key). */
export const keyctlHere = (() => {
  try {
    execFileSync('keyctl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/**
 * Python (top level, no indentation): `NR`, this machine's syscall numbers by name (x86_64 and
 * aarch64), `libc` with errno kept, and `res(r)`, a syscall's return as "ok" or its errno's message.
 * Scripts call syscalls by number because Python has no wrapper for most of the ones the filter closes.
 * `hole` is a number neither arch assigns (x86_64 leaves 387–423 unused, aarch64 295–423).
 */
export const SYSCALLS_PY = `import ctypes, os, platform
NR = {"x86_64": dict(keyctl=250, add_key=248, request_key=249, io_uring_setup=425, bpf=321, clone3=435, perf_event_open=298, userfaultfd=323, setns=308,
                    memfd_secret=447, name_to_handle_at=303, open_by_handle_at=304, kcmp=312, hole=400),
      "aarch64": dict(keyctl=219, add_key=217, request_key=218, io_uring_setup=425, bpf=280, clone3=435, perf_event_open=241, userfaultfd=282, setns=268,
                      memfd_secret=447, name_to_handle_at=264, open_by_handle_at=265, kcmp=272, hole=300)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def res(r):
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
`;

/**
 * Python (top level, after SYSCALLS_PY or its own imports): `out`, the dict of answers the script
 * prints, and `sock(name, *args)`, which opens and closes a `socket.socket(*args)` and records "ok"
 * or the errno's message under `name`.
 */
export const SOCKETS_PY = `import socket
out = {}
def sock(name, *a):
    try:
        socket.socket(*a).close(); out[name] = "ok"
    except OSError as e:
        out[name] = os.strerror(e.errno)
`;
