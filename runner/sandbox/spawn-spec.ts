/**
 * @module One spawn as data: the command, its environment and folder, the bytes for its extra fds
 * and stdin, and what the go-ahead and bubblewrap's info fd need. What buildSpawn (spawn.ts) makes
 * and runProcess (process.ts) and posix_spawn (posix-spawn.ts) take; it imports nothing, so the
 * layers below the spawn can name it without a cycle.
 */
import type { Rlimit } from './go-ahead.js';

export interface SpawnSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Names of `env`, to compare with the approved `willRun.envNames`. */
  envNames: string[];
  /** Bytes for the child's fds 3, 4, …, each written to a pipe and closed (undefined: fd not open). */
  fds: (Buffer | undefined)[];
  /** The bytes the script reads on stdin (absent: stdin is /dev/null). */
  stdin?: Uint8Array;
  /**
   * The bubblewrap levels where the runner sets the rlimits itself (go-ahead.ts): the filter for
   * fd 4 and the limits for bubblewrap's child, which waits for them on fd 5. Only the posix_spawn
   * path can carry it; a spawn that cannot fails closed (process.ts).
   */
  gate?: { filter: Buffer; limits: Rlimit[] };
  /**
   * bubblewrap's `--json-status-fd`: a pipe the chain writes on this fd and the runner reads, which names
   * the sandbox's pid 1 — killed with the run, as it leaves the chain's group (process.ts) — and
   * then whether the command started (start-failure.ts).
   */
  infoFd?: number;
}
