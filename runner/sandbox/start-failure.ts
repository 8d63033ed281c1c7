/**
 * @module Whether a bubblewrap sandbox failed to start, told apart from a script that ran and failed
 * (docs/isolation.md, "A sandbox that cannot start"). Pure.
 *
 * What bubblewrap says (bubblewrap 0.8, measured): on `--json-status-fd` it writes one JSON object
 * a line — `{"child-pid": N, …}` right after its clone, and `{"exit-code": N}` once its command
 * ended, but only when the command was started: a setup step that fails (a bind source it cannot
 * reach, a mount refused, an exec that fails) writes its reason on stderr as `bwrap: …` and exits
 * 1 with no exit-code line. A script that exits 1 — even one printing `bwrap: …` itself — gets its
 * exit-code line. The status fd is not inherited by the sandboxed command, so a script cannot write
 * on it.
 */
import { dirname } from 'node:path';

/** What the check reads of a finished process (runner/sandbox/process.ts's outcome). */
export interface StartOutcome {
  ending: string;
  exitCode: number | null;
  stderr: Uint8Array;
  /** bubblewrap's `--json-status-fd` text, and whether its end was seen (absent without bubblewrap). */
  sandboxStatus?: { text: string; ended: boolean };
}

/** The command's exit code from bubblewrap's status lines, or undefined when it never reported one (the command never ran). */
export function commandExitOf(status: string): number | undefined {
  for (const line of status.split('\n')) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const code = (value as Record<string, unknown> | null)?.['exit-code'];
    if (typeof code === 'number' && Number.isSafeInteger(code)) return code;
  }
  return undefined;
}

/** At most this much of bubblewrap's own words is carried. */
const MAX_WORDS = 600;

/**
 * bubblewrap's own words when its sandbox could not start, else undefined: the process exited 1,
 * the whole status was read and holds no exit-code line, and stderr has bubblewrap's `bwrap: `
 * line(s). Anything less certain — the status cut by the drain window, a kill, a timeout — is left
 * as the run's own ending, so a script that ran is never reported as not started.
 */
export function bubblewrapSaid(o: StartOutcome): string | undefined {
  if (o.sandboxStatus === undefined || !o.sandboxStatus.ended) return undefined;
  if (o.ending !== 'exit' || o.exitCode !== 1) return undefined;
  if (commandExitOf(o.sandboxStatus.text) !== undefined) return undefined;
  const said = Buffer.from(o.stderr)
    .toString('utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('bwrap: '));
  if (said.length === 0) return undefined;
  const words = said.join('; ');
  return words.length > MAX_WORDS ? `${words.slice(0, MAX_WORDS)}…` : words;
}

/** A host folder a run's sandbox binds, and how the model is told about it. */
export interface KnownPath {
  path: string;
  name: string;
}

/**
 * `words` with every absolute host path replaced: a known one by its name (`[the python
 * environment]`), any other by `[a host path]`. bubblewrap names a place inside the sandbox it is
 * building as `/newroot/x`: shown as `/x`, which says nothing of the host. Security: the model never
 * learns the host's folders (a home, a user name, where the state folder is), only what failed.
 */
export function withoutHostPaths(words: string, known: readonly KnownPath[]): string {
  // Known folders first, by their whole text (a space or a colon in one cannot split it), held as
  // placeholders so the path scan below does not read their names.
  const sorted = [...known].filter((k) => k.path.startsWith('/')).sort((a, b) => b.path.length - a.path.length);
  let text = words.replace(/\0/g, '');
  sorted.forEach((k, i) => {
    text = text.split(`/oldroot${k.path}`).join(`\0${i}\0`).split(k.path).join(`\0${i}\0`);
  });
  // Then any other absolute path, up to a space, a quote or a colon that ends it (bubblewrap: "PATH: why").
  text = text.replace(/(^|[\s'"(=])(\/(?:[^\s'";,):\0]|:(?!\s|$))*)/g, (_all, before: string, token: string) =>
    token === '/newroot' || token.startsWith('/newroot/') ? `${before}${token.slice('/newroot'.length) || '/'}` : `${before}[a host path]`,
  );
  return text.replace(/\0(\d+)\0/g, (_all, i: string) => `[${sorted[Number(i)]!.name}]`);
}

/**
 * A run whose sandbox could not start: bubblewrap's words as they are (`hostWords`, for the
 * operator's log) and without host paths (`words`, for the run's exit line and the model), or
 * undefined when the script started (its exit code is then the script's).
 */
export function sandboxStartFailure(o: StartOutcome, known: readonly KnownPath[]): { hostWords: string; words: string } | undefined {
  const said = bubblewrapSaid(o);
  return said === undefined ? undefined : { hostWords: said, words: withoutHostPaths(said, known) };
}

/** The host folders a run's sandbox is built from, named as the model may read them. */
export function runPaths(p: {
  skillCopy: string;
  workspace: string;
  runFolder: string;
  envs: readonly { source: string; mount: string }[];
  envsDir: string;
}): KnownPath[] {
  return [
    { path: p.skillCopy, name: "the run's copy of the skill" },
    { path: p.workspace, name: "the run's workspace" },
    { path: p.runFolder, name: "the run's folder" },
    ...p.envs.map((e) => ({ path: e.source, name: `the environment for ${e.mount}` })),
    { path: p.envsDir, name: "the runner's environments folder" },
    { path: dirname(p.envsDir), name: "the runner's state folder" },
  ];
}

/** The answer to a run whose sandbox could not start: what bubblewrap said, without host paths, and what to do. */
export function sandboxFailedMessage(words: string): string {
  return (
    `the sandbox could not be set up, so the script did not start (its exit code would say nothing about the script): ${words}. ` +
    "This is about the host, not the skill: the operator can run `skill-mcp doctor` (as root, the runner's state folder must be reachable by the run uids) " +
    "and read the runner's log for the whole message. The token was used; ask again for a fresh preview once it is fixed."
  );
}
