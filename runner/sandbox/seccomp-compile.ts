/**
 * @module Every syscall filter program the runner can install, compiled from the policy and the
 * table (seccomp-policy.ts, seccomp-table.ts) by the generator (seccomp-bpf.ts). Runs at build time
 * (build.mjs writes each into dist/seccomp/) and in the tests, which compare the shipped files with
 * a fresh compile; never in the runner, which loads the files (seccomp-programs.ts). A dependency
 * rule (.dependency-cruiser.cjs) keeps this module, the policy, the table and the generator out of
 * the runner's reach.
 *
 * The variants: each arch (a program holds its own arch's block only: it runs on every syscall) ×
 * with or without a memory cgroup (without one System V shm is refused, seccomp-policy.ts). The
 * run's helper runs under the very program its level gives scripts.
 */
import type { Arch } from './seccomp-arch.js';
import { buildFilter, encodeFilter } from './seccomp-bpf.js';
import { runPolicy } from './seccomp-policy.js';
import { programFile } from './seccomp-programs.js';

export const ARCHES: readonly Arch[] = ['x86_64', 'aarch64'];

/** One shipped program: its file name under dist/seccomp/ and its bytes. */
export interface CompiledProgram {
  file: string;
  arch: Arch;
  memoryCounted: boolean;
  bytes: Buffer;
}

/** Every variant, compiled now. */
export function compilePrograms(): CompiledProgram[] {
  return ARCHES.flatMap((arch) =>
    [true, false].map((memoryCounted) => ({
      file: programFile(arch, memoryCounted),
      arch,
      memoryCounted,
      bytes: encodeFilter(buildFilter(runPolicy(memoryCounted), [arch])),
    })),
  );
}
