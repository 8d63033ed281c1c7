/**
 * @module What a run takes in and gives back besides its argv (docs/architecture.md §8, "A run's workspace"): the
 * user's input files and stdin, and the limits both processes read. The front checks an input
 * list before it asks anyone; the runner checks it again, from scratch, at prepare and at run.
 * Pure: strings and numbers in, a verdict out.
 */
import { sha256Hex } from './content-digest.js';
import { checkPathString } from './paths.js';
import { wholeNumber, type VariableSpec } from './settings-schema.js';

/** Most input files one run may carry. */
export const MAX_INPUT_FILES = 256;
/** Default and ceiling of the input total (files and stdin, as bytes). */
export const DEFAULT_RUN_INPUT_BYTES = 16 * 1024 * 1024;
export const MAX_RUN_INPUT_BYTES = 64 * 1024 * 1024;
/** Default and ceiling of the output files' budget (bytes carried back in one result). */
export const DEFAULT_RUN_OUTPUT_FILES_BYTES = 16 * 1024 * 1024;
export const MAX_RUN_OUTPUT_FILES_BYTES = 64 * 1024 * 1024;
const MiB = 1024 * 1024;

export const RUN_INPUT_BYTES: VariableSpec<number> = {
  name: 'SKILL_MCP_RUN_INPUT_BYTES',
  schema: wholeNumber(0, MAX_RUN_INPUT_BYTES),
  expected: `a whole number of bytes from 0 to ${MAX_RUN_INPUT_BYTES}`,
  fallback: DEFAULT_RUN_INPUT_BYTES,
  policy: 'default',
};

export const RUN_OUTPUT_FILES_BYTES: VariableSpec<number> = {
  name: 'SKILL_MCP_RUN_OUTPUT_FILES_BYTES',
  schema: wholeNumber(0, MAX_RUN_OUTPUT_FILES_BYTES),
  expected: `a whole number of bytes from 0 to ${MAX_RUN_OUTPUT_FILES_BYTES}`,
  fallback: DEFAULT_RUN_OUTPUT_FILES_BYTES,
  policy: 'default',
};

/**
 * The largest client message (stdio line, HTTP body) the front reads: a `skill_run` carrying the
 * whole input total as base64 (4/3 of it) plus 1 MiB for its arguments and JSON, rounded up to a
 * MiB; never below the SDK's 4 MiB. 16 MiB of input: 23 MiB.
 */
export function messageCapFor(inputBytes: number): number {
  return Math.max(4 * MiB, Math.ceil((Math.ceil(inputBytes / 3) * 4 + MiB) / MiB) * MiB);
}

/** One input as the preview and the token bind it. */
export interface InputDigest {
  path: string;
  size: number;
  sha256: string;
}

export interface InputFile {
  path: string;
  bytes: Uint8Array;
}

/** The digests of the input files (in request order) and of stdin (absent when none was sent). */
export function digestInputs(
  files: readonly InputFile[],
  stdin: Uint8Array | undefined,
): { files: InputDigest[]; stdin?: { size: number; sha256: string } } {
  return {
    files: files.map((f) => ({ path: f.path, size: f.bytes.length, sha256: sha256Hex(f.bytes) })),
    ...(stdin !== undefined ? { stdin: { size: stdin.length, sha256: sha256Hex(stdin) } } : {}),
  };
}

/**
 * The name two paths collide under on a file system that folds case or normalises Unicode (macOS,
 * Windows, a case-insensitive mount a skill may copy to): NFKC, then lower case, then NFKC again.
 */
function foldKey(path: string): string {
  return path.normalize('NFKC').toLowerCase().normalize('NFKC');
}

/**
 * Why a list of input paths is refused, or undefined. Security: every path passes the path rules
 * (relative, plain segments: no `..`, `.`, absolute, NUL or other control character, backslash,
 * `%`); no two paths name the same file by bytes, by case or by Unicode normalisation; and no path
 * is a file and a folder of another at once — so what the runner writes is exactly what the person
 * approved, one file per name, and nothing lands outside the workspace.
 */
export function inputPathsProblem(paths: readonly string[]): string | undefined {
  if (paths.length > MAX_INPUT_FILES) return `${paths.length} input files; at most ${MAX_INPUT_FILES} may be sent with one run`;
  const files = new Map<string, string>();
  for (const path of paths) {
    const check = checkPathString(path);
    if (!check.ok) return `the input path ${JSON.stringify(path)} is refused: ${check.why}`;
    const key = foldKey(path);
    const other = files.get(key);
    if (other !== undefined) {
      return other === path
        ? `the input path ${JSON.stringify(path)} is sent twice; send each file once`
        : `the input paths ${JSON.stringify(other)} and ${JSON.stringify(path)} name the same file once case and Unicode normalisation are folded; rename one`;
    }
    files.set(key, path);
  }
  const folders = new Map<string, string>();
  for (const path of paths) {
    const segments = path.split('/');
    for (let i = 1; i < segments.length; i += 1) {
      const prefix = segments.slice(0, i).join('/');
      const key = foldKey(prefix);
      const file = files.get(key);
      if (file !== undefined)
        return `the input path ${JSON.stringify(file)} is a file, and ${JSON.stringify(path)} needs it to be a folder; rename one`;
      // One folder, one spelling: `In/a` and `in/b` would be one folder where case is folded.
      const spelled = folders.get(key);
      if (spelled !== undefined && spelled !== prefix)
        return `the input folders ${JSON.stringify(spelled)} and ${JSON.stringify(prefix)} differ only by case or Unicode normalisation; spell the folder one way`;
      folders.set(key, prefix);
    }
  }
  return undefined;
}

/** Why inputs of these sizes are refused (the total counts stdin), or undefined. */
export function inputSizeProblem(sizes: readonly number[], stdinBytes: number, limitBytes: number): string | undefined {
  const total = sizes.reduce((n, s) => n + s, 0) + stdinBytes;
  if (total > limitBytes)
    return `the run's inputs (files and stdin) are ${total} bytes; at most ${limitBytes} may be sent (SKILL_MCP_RUN_INPUT_BYTES)`;
  return undefined;
}

/** The refusal of an input list (paths, then sizes), as the front and the runner both give it. */
export function inputsRefusal(
  paths: readonly string[],
  sizes: readonly number[],
  stdinBytes: number,
  limitBytes: number,
): { code: 'INVALID_PATH' | 'TOO_LARGE'; message: string } | undefined {
  const pathProblem = inputPathsProblem(paths);
  if (pathProblem !== undefined) return { code: 'INVALID_PATH', message: `${pathProblem}; nothing was run` };
  const sizeProblem = inputSizeProblem(sizes, stdinBytes, limitBytes);
  if (sizeProblem !== undefined) return { code: 'TOO_LARGE', message: `${sizeProblem}; nothing was run` };
  return undefined;
}
