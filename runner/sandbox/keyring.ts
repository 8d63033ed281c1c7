/**
 * @module The runner's own session keyring (docs/isolation.md, "Keyrings"). At start the runner
 * joins a new, empty, anonymous session keyring (KEYCTL_JOIN_SESSION_KEYRING with no name), so the
 * keys of the session it was started from — a person's login session, a CI job — are not
 * possessed by it nor by any run it spawns. The bubblewrap runs share this empty keyring, which
 * none of them can read or write (the syscall filter denies every keyring call); the runs without
 * bubblewrap join one of their own in the launcher (launch.ts).
 */
import { koffiWhy, loadLibc } from '../../shared/libc.js';
import { hostArch, KEYCTL_NR } from './seccomp-arch.js';

const KEYCTL_JOIN_SESSION_KEYRING = 1;

/** Joins a fresh session keyring; true when done, else why not. */
export function joinFreshSessionKeyring(): true | { why: string } {
  const arch = hostArch();
  if (process.platform !== 'linux' || arch === undefined) return { why: `no keyring call known for ${process.platform}/${process.arch}` };
  let syscall: (...args: unknown[]) => number;
  const loaded = loadLibc();
  if (!loaded.ok) return { why: koffiWhy(loaded.error) };
  try {
    syscall = loaded.libc.func('long syscall(long, ...)');
  } catch (error) {
    return { why: koffiWhy(error) };
  }
  const nr = KEYCTL_NR[arch];
  return syscall(nr, 'int', KEYCTL_JOIN_SESSION_KEYRING, 'void *', null) >= 0
    ? true
    : { why: 'keyctl(KEYCTL_JOIN_SESSION_KEYRING) failed' };
}
