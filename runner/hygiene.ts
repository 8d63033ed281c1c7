/**
 * @module Start-up hygiene for the privileged runner (docs/architecture.md §8, docs/platform-notes.md §4): close inherited file
 * descriptors that would leak into every script, and scrub the runner's own `/proc/self/environ`
 * so secret values are not readable there (they live on in a private copy for granted runs).
 */
import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/**
 * Closes every fd above 2 that lacks close-on-exec. Returns how many it closed.
 * Security: Node marks only its own fds close-on-exec; an fd inherited from whoever started the
 * runner (say one open on /etc/shadow) would otherwise reach every script, whatever its uid.
 */
export function closeInheritedFds(): number {
  let closed = 0;
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return 0;
  }
  for (const name of fds) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      const flags = Number.parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
      if ((flags & O_CLOEXEC) === 0) {
        closeSync(fd);
        closed++;
      }
    } catch {
      // The fd used by readdir itself is gone by now; nothing to close.
    }
  }
  return closed;
}

export interface ScrubResult {
  scrubbed: boolean;
  detail?: string;
}

/** `env_start` and `env_end` from /proc/self/stat (fields 50 and 51, counted after the last ")"). */
function environRange(): { start: number; end: number } {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Field 3 is the first after ")", so field N sits at index N - 3.
  const start = Number(fields[50 - 3]);
  const end = Number(fields[51 - 3]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) throw new Error('no environ range in /proc/self/stat');
  return { start, end };
}

/**
 * Zeroes the initial environment block through /proc/self/mem, after re-setting every variable so
 * libc and Node hold their own heap copies. Then reads /proc/self/environ back to prove it.
 * Security: another process of a uid that may read our /proc entries (or a core dump) must not
 * find granted secret values or the token secret in the environ block.
 */
export function scrubEnviron(env: NodeJS.ProcessEnv): ScrubResult {
  try {
    for (const [key, value] of Object.entries(env)) if (value !== undefined) env[key] = `${value}`;
    const { start, end } = environRange();
    if (end > start) {
      const fd = openSync('/proc/self/mem', 'r+');
      try {
        writeSync(fd, Buffer.alloc(end - start), 0, end - start, start);
      } finally {
        closeSync(fd);
      }
    }
    const after = readFileSync('/proc/self/environ');
    if (after.some((byte) => byte !== 0)) return { scrubbed: false, detail: 'the environ block still holds bytes after zeroing' };
    return { scrubbed: true };
  } catch (error) {
    return {
      scrubbed: false,
      detail: `could not zero the environ block (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    };
  }
}
