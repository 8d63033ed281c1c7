/**
 * The workspace cap's parts on their own (runner/workspace/capacity.ts, watch.ts, mount.ts): what
 * inputs take, the watcher's walk over a real folder (real usage, never through a link, every
 * entry counted, what it cannot see counted as over), and the mountinfo reading the unmount and
 * the crash sweep rely on. The end-to-end attacks are in test/e2e/skill-run-workspace-cap.test.ts.
 */
import { chmodSync, linkSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { closeSync, ftruncateSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inputsCapProblem, inputsFootprint, workspaceFullNote } from '../../runner/workspace/capacity.js';
import { mountPoints, mountsAtOrBelow, tmpfsData } from '../../runner/workspace/mount.js';
import { measureWorkspace } from '../../runner/workspace/watch.js';

const MIB = 1024 * 1024;
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) {
    try {
      chmodSync(join(dir, 'locked'), 0o700);
    } catch {
      // not made by this test
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

function workspace(): { dir: string; dev: number; ino: number } {
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-wscap-'));
  made.push(dir);
  const st = lstatSync(dir);
  return { dir, dev: st.dev, ino: st.ino };
}

describe('what the inputs take', () => {
  it('each file rounded up to pages, and one entry per file and per folder', () => {
    expect(inputsFootprint(['a.txt', 'in/b.txt', 'in/deep/c.txt'], [1, 4096, 4097])).toEqual({ bytes: 4096 + 4096 + 8192, files: 5 });
    expect(inputsFootprint([], [])).toEqual({ bytes: 0, files: 0 });
  });

  it('inputs that fill the workspace by themselves are refused, naming the variable', () => {
    expect(inputsCapProblem(['a'], [MIB], { bytes: MIB, files: 10 })).toBeUndefined();
    expect(inputsCapProblem(['a'], [MIB + 1], { bytes: MIB, files: 10 })).toMatch(/SKILL_MCP_RUN_WORKSPACE_BYTES\); nothing was run$/);
    expect(inputsCapProblem(['d/a', 'd/b'], [1, 1], { bytes: MIB, files: 2 })).toMatch(
      /3 entries .*SKILL_MCP_RUN_WORKSPACE_FILES\); nothing was run$/,
    );
  });

  it('the note names the cap, how it was kept, and whether the run was stopped', () => {
    const cap = { bytes: 100, files: 5 };
    expect(workspaceFullNote('bytes', 'tmpfs', cap, undefined, false)).toMatch(/reached its cap of 100 bytes .*No space left on device/);
    expect(workspaceFullNote('files', 'watch', cap, 'more than 5 files and folders', true)).toMatch(
      /^the run was stopped: its workspace went past its cap of 5 files and folders/,
    );
  });
});

describe("the watcher's walk", () => {
  it('sums real usage: a sparse file counts its blocks, not its apparent size', async () => {
    const ws = workspace();
    const fd = openSync(join(ws.dir, 'sparse'), 'w');
    ftruncateSync(fd, 1024 * MIB);
    closeSync(fd);
    writeFileSync(join(ws.dir, 'real'), Buffer.alloc(MIB, 1));
    const use = await measureWorkspace(ws, { bytes: 8 * MIB, files: 100 });
    expect(use.over).toBeUndefined();
    expect(use.files).toBe(2);
    expect(use.bytes).toBeGreaterThanOrEqual(MIB);
    expect(use.bytes).toBeLessThan(2 * MIB);
  });

  it('a file at the cap is over it (its next write fails), one past the file count is over, in slices', async () => {
    const ws = workspace();
    writeFileSync(join(ws.dir, 'full'), Buffer.alloc(MIB, 1));
    expect(await measureWorkspace(ws, { bytes: MIB, files: 100 })).toMatchObject({ over: 'bytes' });
    // The last look sums the whole workspace, and still finds it over.
    expect(await measureWorkspace(ws, { bytes: MIB, files: 100 }, true)).toMatchObject({ over: 'bytes', files: 1 });
    mkdirSync(join(ws.dir, 'many'));
    for (let i = 0; i < 40; i += 1) writeFileSync(join(ws.dir, 'many', String(i)), '');
    expect(await measureWorkspace(ws, { bytes: 8 * MIB, files: 41 }, false, 3)).toMatchObject({
      over: 'files',
      why: 'more than 41 files and folders',
    });
    expect(await measureWorkspace(ws, { bytes: 8 * MIB, files: 42 }, false, 3)).toEqual({ bytes: expect.any(Number), files: 42 });
  });

  it('a file with many names counts once; every name counts as an entry', async () => {
    const ws = workspace();
    writeFileSync(join(ws.dir, 'one'), Buffer.alloc(MIB, 1));
    for (let i = 0; i < 5; i += 1) linkSync(join(ws.dir, 'one'), join(ws.dir, `name${i}`));
    const use = await measureWorkspace(ws, { bytes: 2 * MIB, files: 100 });
    expect(use).toMatchObject({ files: 6 });
    expect(use.over).toBeUndefined();
  });

  it('attack: a link to a big folder outside is never followed', async () => {
    const ws = workspace();
    const outside = workspace();
    writeFileSync(join(outside.dir, 'big'), Buffer.alloc(2 * MIB, 1));
    symlinkSync(outside.dir, join(ws.dir, 'out'));
    expect(await measureWorkspace(ws, { bytes: MIB, files: 100 })).toMatchObject({ files: 1 });
    expect((await measureWorkspace(ws, { bytes: MIB, files: 100 })).over).toBeUndefined();
  });

  it('attack: the workspace folder swapped for a link, or moved away, counts as over (unmeasurable)', async () => {
    const ws = workspace();
    const elsewhere = workspace();
    renameSync(ws.dir, `${ws.dir}-moved`);
    made.push(`${ws.dir}-moved`);
    expect(await measureWorkspace(ws, { bytes: MIB, files: 100 })).toMatchObject({
      over: 'unmeasurable',
      why: expect.stringMatching(/moved or removed/),
    });
    symlinkSync(elsewhere.dir, ws.dir);
    expect(await measureWorkspace(ws, { bytes: MIB, files: 100 })).toMatchObject({
      over: 'unmeasurable',
      why: expect.stringMatching(/replaced its workspace folder/),
    });
    rmSync(ws.dir);
  });

  it.skipIf(process.getuid?.() === 0)(
    'attack: a folder made unreadable to hide what is in it counts as over (root reads it anyway)',
    async () => {
      const ws = workspace();
      mkdirSync(join(ws.dir, 'locked'));
      writeFileSync(join(ws.dir, 'locked', 'hidden'), Buffer.alloc(MIB, 1));
      chmodSync(join(ws.dir, 'locked'), 0);
      expect(await measureWorkspace(ws, { bytes: 8 * MIB, files: 100 })).toMatchObject({
        over: 'unmeasurable',
        why: expect.stringMatching(/cannot be read \(EACCES\)/),
      });
    },
  );
});

describe('mountinfo', () => {
  const info = [
    '22 27 0:21 / /proc rw,relatime - proc proc rw',
    '46 27 0:47 / /srv/scratch\\040dir/run-1-00/work rw,nosuid,nodev,relatime - tmpfs skill-mcp-work rw,size=8192k',
    '47 46 0:48 / /srv/scratch\\040dir/run-1-00/work/inner rw - tmpfs x rw',
    '48 27 0:49 / /srv/scratch\\040dir/run-1-000 rw - tmpfs y rw',
  ].join('\n');

  it('reads mount points with their escapes undone', () => {
    expect(mountPoints(info)).toEqual([
      '/proc',
      '/srv/scratch dir/run-1-00/work',
      '/srv/scratch dir/run-1-00/work/inner',
      '/srv/scratch dir/run-1-000',
    ]);
  });

  it('finds what is at or below a folder (not a sibling that shares its prefix), the last mounted first', () => {
    const dir = workspace().dir;
    const at = `${dir}/run-1-00`;
    mkdirSync(at);
    const ours = info.replaceAll('/srv/scratch\\040dir', dir);
    expect(mountsAtOrBelow(at, ours)).toEqual([`${at}/work/inner`, `${at}/work`]);
  });

  it("the tmpfs options: the caps (one inode more, for its root folder), the run's own, private", () => {
    expect(tmpfsData({ bytes: 8 * MIB, files: 200 }, 61234)).toBe('size=8388608,nr_inodes=201,mode=0700,uid=61234,gid=61234');
  });
});
