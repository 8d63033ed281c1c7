#!/usr/bin/env node
/**
 * @module Makes runner/sandbox/seccomp-table.ts, the syscall filter's table of every syscall of
 * x86_64 and aarch64 by name and number (docs/isolation.md, "The syscall filter"). Both arches are
 * made the same way: libseccomp's own table, asked number by number from 0 to 599 with
 * `scmp_sys_resolver -a ARCH N` (Debian package `seccomp`), then the calls newer than that
 * libseccomp from {@link LATER} (the kernel's syscall tables; a row libseccomp also knows must
 * agree with it). test/runner/seccomp-filter.test.ts makes the table again and compares.
 *
 *   node tools/seccomp-table.mjs          writes the file (then `npm run format`)
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ARCHES = ['x86_64', 'aarch64'];
/** Numbers asked: past the last one either arch has (x86_64's x32 calls carry bit 0x40000000 and are not asked). */
const LAST_ASKED = 599;

/**
 * Calls newer than libseccomp 2.5.4 (Debian 12), which knows up to futex_requeue (456). From Linux
 * 5.1 on, new calls take one number on every arch (457 onwards below); uretprobe (Linux 6.11) is
 * x86_64 only. Checked on Linux 6.18: 457–469 answer something other than ENOSYS, 470 ENOSYS.
 */
export const LATER = [
  ['statmount', 457],
  ['listmount', 458],
  ['lsm_get_self_attr', 459],
  ['lsm_set_self_attr', 460],
  ['lsm_list_modules', 461],
  ['mseal', 462],
  ['setxattrat', 463],
  ['getxattrat', 464],
  ['listxattrat', 465],
  ['removexattrat', 466],
  ['open_tree_attr', 467],
  ['file_getattr', 468],
  ['file_setattr', 469],
].map(([name, nr]) => ({ name, nr: { x86_64: nr, aarch64: nr } }));
LATER.push({ name: 'uretprobe', nr: { x86_64: 335 } });

/** One arch's table from libseccomp: name → number. */
async function fromLibseccomp(arch) {
  const script = `for n in $(seq 0 ${LAST_ASKED}); do printf '%s ' "$n"; scmp_sys_resolver -a ${arch} "$n"; done`;
  const { stdout } = await promisify(execFile)('sh', ['-c', script], { maxBuffer: 1 << 20 });
  const table = {};
  for (const line of stdout.trim().split('\n')) {
    const [nr, name] = line.split(' ');
    if (name !== 'UNKNOWN') table[name] = Number(nr);
  }
  return table;
}

/** Both arches' tables, name → number, each sorted by number. Throws where a LATER row and libseccomp disagree. */
export async function makeTables() {
  const tables = {};
  for (const arch of ARCHES) {
    const table = await fromLibseccomp(arch);
    for (const { name, nr } of LATER) {
      if (nr[arch] === undefined) continue;
      if (table[name] !== undefined && table[name] !== nr[arch])
        throw new Error(`${arch} ${name}: libseccomp says ${table[name]}, LATER says ${nr[arch]}`);
      const other = Object.entries(table).find(([n, v]) => v === nr[arch] && n !== name);
      if (other) throw new Error(`${arch} ${name} ${nr[arch]}: libseccomp gives that number to ${other[0]}`);
      table[name] = nr[arch];
    }
    tables[arch] = Object.fromEntries(Object.entries(table).sort(([, a], [, b]) => a - b));
  }
  return tables;
}

function render(tables) {
  const lines = [
    '/**',
    " * @module Every syscall of x86_64 and aarch64 by name and number: the syscall filter's table",
    " * (seccomp-policy.ts). Made by tools/seccomp-table.mjs from libseccomp's table (scmp_sys_resolver)",
    ' * and the calls newer than it; do not edit by hand, run the tool. A number not here answers ENOSYS',
    ' * in the filter (docs/isolation.md, "The syscall filter").',
    ' */',
    '',
    'export const SYSCALL_NUMBERS = {',
  ];
  for (const arch of ARCHES) {
    lines.push(`  ${arch}: {`);
    for (const [name, nr] of Object.entries(tables[arch])) lines.push(`    ${name}: ${nr},`);
    lines.push('  },');
  }
  lines.push('} as const;', '');
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'runner', 'sandbox', 'seccomp-table.ts');
  writeFileSync(out, render(await makeTables()));
  console.log(`wrote ${out}`);
}
