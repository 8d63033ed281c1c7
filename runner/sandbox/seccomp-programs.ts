/**
 * @module The syscall filter as the runner takes it (docs/isolation.md, "The syscall filter"): the
 * programs are compiled at build time from the policy and the table (seccomp-compile.ts, run by
 * build.mjs) into `dist/seccomp/`, one file of raw `struct sock_filter` bytes per arch and variant.
 * The runner never runs the generator: at start it reads the two programs of its own arch, checks
 * their shape, and refuses to start when either is missing or malformed — a run is never spawned
 * unfiltered because a file was not there.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SkillMcpError } from '../../shared/errors.js';
import { AUDIT_ARCH, hostArch } from './seccomp-arch.js';
import type { Arch } from './seccomp-arch.js';

/** The folder beside the bundles (dist/) that holds the programs. */
export const PROGRAMS_DIR = 'seccomp';

/** The kernel's limit on a classic BPF program (BPF_MAXINSNS); one instruction is 8 bytes. */
export const MAX_INSNS = 4096;
const INSN_BYTES = 8;

/**
 * The file of one variant: `memoryCounted` where a memory cgroup counts every page of a run, else
 * the variant that also refuses System V shm (seccomp-policy.ts, `runPolicy`).
 */
export function programFile(arch: Arch, memoryCounted: boolean): string {
  return `run-${arch}${memoryCounted ? '' : '-shm-refused'}.bpf`;
}

/** Both programs of this machine's arch. */
export interface HostPrograms {
  /** A level with a memory cgroup. */
  memoryCounted: Buffer;
  /** A level without one: System V shm refused too. */
  shmRefused: Buffer;
}

/** The program a level installs. */
export function programFor(programs: HostPrograms, memoryCounted: boolean): Buffer {
  return memoryCounted ? programs.memoryCounted : programs.shmRefused;
}

/** Where the built programs sit: beside the bundle this module is in (dist/seccomp/). */
export function shippedProgramsDir(): string {
  return fileURLToPath(new URL(`./${PROGRAMS_DIR}/`, import.meta.url));
}

/**
 * Why `bytes` is not a program of `arch` as the generator makes them, or undefined.
 * Security: a cut, padded, oversized or other arch's file is never handed to bubblewrap or the
 * launcher as the filter. Every generated program starts `ld [arch]; jeq AUDIT_ARCH_<arch>` and
 * ends `ret KILL_PROCESS` (seccomp-bpf.ts, buildFilter); the kernel checks the rest when it loads it.
 */
export function programProblem(bytes: Buffer, arch: Arch): string | undefined {
  if (bytes.length > MAX_INSNS * INSN_BYTES) return `over the kernel's limit of ${MAX_INSNS} instructions`;
  if (bytes.length === 0 || bytes.length % INSN_BYTES !== 0) return `${bytes.length} bytes is not a whole number of 8-byte instructions`;
  if (bytes.readUInt16LE(0) !== 0x20 || bytes.readUInt32LE(4) !== 4) return 'it does not begin by loading the arch word';
  if (bytes.length < 3 * INSN_BYTES || bytes.readUInt16LE(8) !== 0x15 || bytes.readUInt32LE(12) !== AUDIT_ARCH[arch])
    return `it is not a program for ${arch}`;
  const last = bytes.length - INSN_BYTES;
  if (bytes.readUInt16LE(last) !== 0x06 || bytes.readUInt32LE(last + 4) !== 0x80000000)
    return 'it does not end by killing a call of any other arch';
  return undefined;
}

/** Reads a regular file of at most `max` bytes (one byte more is read to tell a longer one). */
function readBounded(path: string, max: number): Buffer | string {
  let fd: number;
  try {
    // Security: O_NOFOLLOW and O_NONBLOCK: not a link to elsewhere, and a FIFO put there cannot hang the start.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'unreadable';
  }
  try {
    if (!fstatSync(fd).isFile()) return 'not a regular file';
    const buf = Buffer.alloc(max + 1);
    let filled = 0;
    for (let n = -1; n !== 0 && filled < buf.length; filled += n) n = readSync(fd, buf, filled, buf.length - filled, null);
    return buf.subarray(0, filled);
  } finally {
    closeSync(fd);
  }
}

/**
 * The programs of this machine's arch from `dir` (default {@link shippedProgramsDir}); undefined
 * where the runner has no filter (not Linux, or an arch the table does not know). Throws as
 * {@link loadPrograms}.
 */
export function loadHostPrograms(dir: string = shippedProgramsDir()): HostPrograms | undefined {
  const arch = hostArch();
  return process.platform === 'linux' && arch !== undefined ? loadPrograms(dir, arch) : undefined;
}

/**
 * Both programs of `arch` from `dir`. Throws SANDBOX_UNAVAILABLE when either is missing or
 * malformed: the runner does not start rather than run unfiltered.
 */
export function loadPrograms(dir: string, arch: Arch): HostPrograms {
  const read = (memoryCounted: boolean): Buffer => {
    const name = programFile(arch, memoryCounted);
    const bytes = readBounded(join(dir, name), MAX_INSNS * INSN_BYTES);
    const why = typeof bytes === 'string' ? bytes : programProblem(bytes, arch);
    if (why !== undefined || typeof bytes === 'string')
      throw new SkillMcpError(
        'SANDBOX_UNAVAILABLE',
        `the syscall filter's program ${PROGRAMS_DIR}/${name} beside the runner's bundle cannot be used (${why}); nothing runs without it: rebuild (npm run build) or reinstall the package`,
      );
    return bytes;
  };
  return { memoryCounted: read(true), shmRefused: read(false) };
}
