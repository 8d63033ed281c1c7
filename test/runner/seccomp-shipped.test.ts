/**
 * The syscall filter as shipped (runner/sandbox/seccomp-programs.ts): the programs the build wrote
 * into dist/seccomp/ are exactly a fresh compile of the current policy and table
 * (seccomp-compile.ts) — a policy or table changed without a rebuild fails here — and the loader the
 * runner starts with refuses every file that is not one of them: missing, empty, cut, padded, over
 * the kernel's limit, another arch's, a link, a FIFO. Needs `npm run build` first (as every test of
 * dist/ does).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Arch } from '../../runner/sandbox/seccomp-arch.js';
import { ARCHES, compilePrograms } from '../../runner/sandbox/seccomp-compile.js';
import { loadPrograms, MAX_INSNS, programFile, programProblem } from '../../runner/sandbox/seccomp-programs.js';

const SHIPPED = join(import.meta.dirname, '../../dist/seccomp');
const temp = mkdtempSync(join(tmpdir(), 'skill-mcp-seccomp-shipped-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

const compiled = compilePrograms();
const fresh = (arch: Arch, memoryCounted: boolean): Buffer =>
  compiled.find((p) => p.arch === arch && p.memoryCounted === memoryCounted)!.bytes;

/** A folder holding both programs of `arch` as compiled now, with `change` applied to one file. */
function folderWith(arch: Arch, change?: { memoryCounted: boolean; bytes?: Buffer; make?: (path: string) => void }): string {
  const dir = mkdtempSync(join(temp, 'dir-'));
  for (const memoryCounted of [true, false]) {
    const path = join(dir, programFile(arch, memoryCounted));
    if (change?.memoryCounted === memoryCounted) {
      if (change.bytes) writeFileSync(path, change.bytes);
      change.make?.(path);
    } else writeFileSync(path, fresh(arch, memoryCounted));
  }
  return dir;
}

/** The loader's refusal: its code and message. */
function refusal(dir: string, arch: Arch): { code: string; message: string } {
  try {
    loadPrograms(dir, arch);
  } catch (error) {
    return { code: (error as { code: string }).code, message: (error as Error).message };
  }
  throw new Error('the loader took the folder');
}

describe('the shipped programs are a fresh compile of the current policy and table', () => {
  it('dist/seccomp/ holds exactly the variants compilePrograms makes (two arches × with or without a memory cgroup)', () => {
    expect(compiled.map((p) => p.file).sort()).toEqual([
      'run-aarch64-shm-refused.bpf',
      'run-aarch64.bpf',
      'run-x86_64-shm-refused.bpf',
      'run-x86_64.bpf',
    ]);
    expect(readdirSync(SHIPPED).sort(), 'dist/seccomp/ is stale or has a file no variant names: run npm run build').toEqual(
      compiled.map((p) => p.file).sort(),
    );
  });

  for (const program of compiled)
    it(`${program.file} is byte for byte what the policy and table compile to now (else: npm run build)`, () => {
      expect(readFileSync(join(SHIPPED, program.file)).equals(program.bytes)).toBe(true);
    });

  it('the two variants of an arch differ (shmget refused in one), so a level cannot be given the other by a swapped name', () => {
    for (const arch of ARCHES) expect(fresh(arch, true).equals(fresh(arch, false))).toBe(false);
  });

  for (const arch of ARCHES)
    it(`the loader takes ${arch}'s shipped pair and hands each level its own`, () => {
      const loaded = loadPrograms(SHIPPED, arch);
      expect(loaded.memoryCounted.equals(fresh(arch, true))).toBe(true);
      expect(loaded.shmRefused.equals(fresh(arch, false))).toBe(true);
    });

  it('the build step writes the files (node build.mjs has run: the runner bundle has none of the generator in it)', () => {
    // The generator's own names do not appear in the privileged bundle: it loads, never compiles.
    const runner = readFileSync(join(import.meta.dirname, '../../dist/skill-mcp-runner.cjs'), 'utf8');
    expect(runner).toContain('loadHostPrograms');
    for (const name of ['buildFilter', 'encodeFilter', 'SYSCALL_NUMBERS', 'runPolicy', 'SHMGET_REFUSED'])
      expect(runner).not.toContain(name);
  });
});

describe('the loader refuses what is not a shipped program (the runner does not start: SANDBOX_UNAVAILABLE)', () => {
  const arch: Arch = 'x86_64';
  const good = fresh(arch, false);

  it('a missing program: refused, naming the file and saying to rebuild, with no host path', () => {
    const dir = folderWith(arch, { memoryCounted: false });
    const r = refusal(dir, arch);
    expect(r.code).toBe('SANDBOX_UNAVAILABLE');
    expect(r.message).toContain('seccomp/run-x86_64-shm-refused.bpf');
    expect(r.message).toContain('ENOENT');
    expect(r.message).toContain('npm run build');
    expect(r.message).not.toContain(temp);
  });

  it('a missing folder (a build from before the programs shipped): refused', () => {
    expect(refusal(join(temp, 'no-such-folder'), arch).code).toBe('SANDBOX_UNAVAILABLE');
  });

  it('an empty file: refused', () => {
    expect(refusal(folderWith(arch, { memoryCounted: true, bytes: Buffer.alloc(0) }), arch).message).toContain(
      '0 bytes is not a whole number of 8-byte instructions',
    );
  });

  it('a program cut mid-instruction (not a multiple of 8 bytes): refused', () => {
    const cut = good.subarray(0, good.length - 3);
    expect(refusal(folderWith(arch, { memoryCounted: false, bytes: cut }), arch).message).toContain('not a whole number');
  });

  it('a program cut at an instruction (its closing kill lost): refused', () => {
    const cut = good.subarray(0, good.length - 8);
    expect(refusal(folderWith(arch, { memoryCounted: false, bytes: cut }), arch).message).toContain(
      'does not end by killing a call of any other arch',
    );
  });

  it(`a program over the kernel's ${MAX_INSNS} instructions: refused, without reading it all`, () => {
    const huge = Buffer.concat([good, Buffer.alloc(MAX_INSNS * 8 * 4)]);
    expect(refusal(folderWith(arch, { memoryCounted: false, bytes: huge }), arch).message).toContain(
      `over the kernel's limit of ${MAX_INSNS} instructions`,
    );
  });

  it("the other arch's program under this arch's name: refused (its numbers mean other calls)", () => {
    const r = refusal(folderWith(arch, { memoryCounted: true, bytes: fresh('aarch64', true) }), arch);
    expect(r.message).toContain('it is not a program for x86_64');
  });

  it('bytes that are not a filter of ours (a zeroed program of the right length): refused', () => {
    const r = refusal(folderWith(arch, { memoryCounted: true, bytes: Buffer.alloc(good.length) }), arch);
    expect(r.message).toContain('does not begin by loading the arch word');
  });

  it('a symlink to the real program: refused (O_NOFOLLOW), so the file cannot be pointed elsewhere', () => {
    const real = join(temp, 'real.bpf');
    writeFileSync(real, good);
    const r = refusal(folderWith(arch, { memoryCounted: false, make: (path) => symlinkSync(real, path) }), arch);
    expect(r.message).toContain('ELOOP');
  });

  it('a FIFO in its place: refused at once (not a regular file), the start does not hang on it', () => {
    const r = refusal(folderWith(arch, { memoryCounted: false, make: (path) => execFileSync('mkfifo', [path]) }), arch);
    expect(r.message).toContain('not a regular file');
  });

  it('a folder in its place: refused', () => {
    const r = refusal(folderWith(arch, { memoryCounted: false, make: (path) => mkdirSync(path) }), arch);
    expect(r.message).toContain('not a regular file');
  });

  it('programProblem passes every compiled program for its own arch and refuses it for the other', () => {
    for (const p of compiled) {
      expect(programProblem(p.bytes, p.arch)).toBeUndefined();
      expect(programProblem(p.bytes, p.arch === 'x86_64' ? 'aarch64' : 'x86_64')).toMatch(/not a program for/);
    }
  });
});
