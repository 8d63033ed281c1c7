/**
 * @module Turns the catalog's places (relative to a root's folder name, as the model sees them)
 * back into paths relative to the directory `check` runs in, so a person can open them. Nothing
 * absolute is ever printed.
 */
import { lstatSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { rootLabel } from '../../shared/discover.js';

export class Places {
  readonly #roots: { abs: string; label: string }[];
  readonly #cwd: string;

  /** `SKILL_MCP_DECLARATIONS`, when set: operator declaration problems are shown at their file there. */
  readonly declarationsDir: string | undefined;

  constructor(roots: readonly string[], cwd: string, declarationsDir?: string) {
    this.#cwd = cwd;
    this.declarationsDir = declarationsDir;
    this.#roots = roots.map((root) => ({ abs: resolve(cwd, root), label: rootLabel(resolve(cwd, root)) }));
  }

  /** `abs` relative to the working directory, `/`-separated ("." for the directory itself). */
  fromAbsolute(abs: string): string {
    return relative(this.#cwd, abs).split(sep).join('/') || '.';
  }

  /**
   * The path of a catalog place. `root` is known for a skill's own problems; discovery problems
   * only carry the label, so two roots with one folder name are told apart by what exists.
   */
  fromDisplay(display: string, root?: number): string {
    const [label, ...rest] = display.split('/');
    const candidates = root !== undefined ? [this.#roots[root]!] : this.#roots.filter((r) => r.label === label);
    const paths = candidates.map((r) => join(r.abs, ...rest));
    const existing = paths.find((p) => lstatSync(p, { throwIfNoEntry: false }) !== undefined);
    const chosen = existing ?? paths[0];
    return chosen === undefined ? display : this.fromAbsolute(chosen);
  }
}
