/**
 * @module The two arches the syscall filter knows, and the one call number the run launcher needs
 * (keyctl, to join a fresh session keyring) — apart from the filter's table, so the launcher
 * (dist/skill-mcp-launch.cjs, one node start per run at the levels without bubblewrap) bundles
 * neither the table nor the policy. test/runner/seccomp-filter.test.ts checks KEYCTL_NR against the table.
 */

export type Arch = 'x86_64' | 'aarch64';

/** keyctl(2)'s number on each arch. */
export const KEYCTL_NR: Record<Arch, number> = { x86_64: 250, aarch64: 219 };

/** The arch of this process as the filter names it, or undefined where the runner has no filter. */
export function hostArch(nodeArch: string = process.arch): Arch | undefined {
  if (nodeArch === 'x64') return 'x86_64';
  if (nodeArch === 'arm64') return 'aarch64';
  return undefined;
}
