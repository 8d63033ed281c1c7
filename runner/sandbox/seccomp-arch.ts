/**
 * @module The two arches the syscall filter knows, the arch word the kernel gives each, and the one
 * call number the runner and the run launcher need (keyctl, to join a fresh session keyring) —
 * apart from the filter's table, so neither the runner (which loads the programs made at build
 * time, seccomp-programs.ts) nor the launcher (dist/skill-mcp-launch.cjs) bundles the table, the
 * policy or the generator. test/runner/seccomp-filter.test.ts checks KEYCTL_NR against the table.
 */

export type Arch = 'x86_64' | 'aarch64';

/** `AUDIT_ARCH_*` as the kernel writes it into `seccomp_data.arch`. */
export const AUDIT_ARCH: Record<Arch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };

/** keyctl(2)'s number on each arch. */
export const KEYCTL_NR: Record<Arch, number> = { x86_64: 250, aarch64: 219 };

/** The arch of this process as the filter names it, or undefined where the runner has no filter. */
export function hostArch(nodeArch: string = process.arch): Arch | undefined {
  if (nodeArch === 'x64') return 'x86_64';
  if (nodeArch === 'arm64') return 'aarch64';
  return undefined;
}
