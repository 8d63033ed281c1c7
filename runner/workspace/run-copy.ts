/**
 * @module A run's private copy of its skill (docs/architecture.md §7, §8). At run time the runner
 * copies the skill's served files into a folder it owns, hashing the very bytes it writes, compares
 * those digests with the approval, and the sandbox runs the copy (bubblewrap binds it read-only at
 * /skill; the other levels start in it). An edit of the skill folder after the check — the script,
 * a module it requires, a data file, a link — can then no longer reach the run: there is no window
 * between what was checked and what executes.
 *
 * The copy lives beside the run's scratch folder (`run-<pid>-<run id>-skill`), so a runner starting
 * after a crash removes it with the run folders (runner/workspace/scratch.ts). Files are regular files (links
 * inside the skill are copied as what they point to), read-only, readable by the run uid; folders
 * belong to the runner, so no run can add to or change its copy. Compiled Python (`__pycache__/`,
 * `*.pyc`, `*.pyo`) is hashed with the rest but left out of the copy (shared/bytecode.ts).
 */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, rmSync, write, constants } from 'node:fs';
import { join } from 'node:path';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { isBytecode } from '../../shared/bytecode.js';
import type { ContentSink } from '../../shared/skill-content.js';
import { readSkillContent } from '../../shared/skill-content.js';
import type { ContentSource, DeriveContext } from '../requests/derive.js';
import { contentLimits } from '../requests/derive.js';
import { runFolderName } from './scratch.js';

const writeAsync = promisify(write);

/** Folders of the copy: the runner's, traversable and readable by the run uid, writable by no run. */
const DIR_MODE = 0o755;

/** The folder of `runId`'s copy under the scratch directory. */
export function runCopyDir(scratchDir: string, runId: string): string {
  return `${join(scratchDir, runFolderName(runId))}-skill`;
}

export class RunCopy {
  readonly dir: string;
  #made = false;

  constructor(scratchDir: string, runId: string) {
    this.dir = runCopyDir(scratchDir, runId);
  }

  /** Reads the skill by copying it here; the plan derived from it runs in this folder. */
  source(ctx: DeriveContext): ContentSource {
    return {
      runDir: this.dir,
      read: async (skill) => {
        this.remove();
        try {
          // Security: created fresh (a leftover or planted entry under this name is refused, not reused).
          mkdirSync(this.dir, { mode: 0o700 });
          this.#made = true;
          const result = await readSkillContent(skill.name, skill.realDir, contentLimits(ctx), this.#sink());
          chmodSync(this.dir, DIR_MODE);
          return result;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code ?? 'error';
          return {
            ok: false,
            code: 'INTERNAL',
            why: `the runner could not write its copy of the skill (${code}); nothing was run — check the scratch directory's free space`,
          };
        }
      },
    };
  }

  #sink(): ContentSink {
    const root = this.dir;
    const made = new Set<string>([root]);
    const folder = (segments: string[]): string => {
      let at = root;
      for (const segment of segments) {
        at = join(at, segment);
        if (made.has(at)) continue;
        mkdirSync(at);
        chmodSync(at, DIR_MODE);
        made.add(at);
      }
      return at;
    };
    return {
      open(path, mode) {
        // Security: compiled Python is hashed (the approval binds every served file) but never
        // copied: python would run it instead of the reviewed source (shared/bytecode.ts).
        if (isBytecode(path)) return { async write() {}, close() {} };
        const segments = path.split('/');
        const name = segments.pop()!;
        // Security: O_EXCL never follows or reuses an entry; the walk's paths are string-checked
        // (no `..`, no empty segment), so every file lands inside the copy.
        const fd = openSync(
          join(folder(segments), name),
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        );
        return {
          // The runner's hashing thread writes the copy itself, from the bytes it hashes.
          fd,
          // Off the event loop, like the read it copies (a 64 MiB skill must not stall the runner).
          async write(chunk) {
            for (let at = 0; at < chunk.length; ) at += (await writeAsync(fd, chunk, at, chunk.length - at)).bytesWritten;
          },
          close() {
            // Read-only for everyone; an executable bit is kept (a skill may exec its own helper).
            fchmodSync(fd, (mode & 0o111) !== 0 ? 0o555 : 0o444);
            closeSync(fd);
          },
        };
      },
    };
  }

  /** {@link remove} on the thread pool (after a run, while its exit line is fsynced). */
  async removeAsync(): Promise<void> {
    if (!this.#made) return;
    await rm(this.dir, { recursive: true, force: true });
    this.#made = false;
  }

  /** Removes the copy (after the run, or before a fresh one under the same name). */
  remove(): void {
    if (!this.#made) return;
    rmSync(this.dir, { recursive: true, force: true });
    this.#made = false;
  }
}
