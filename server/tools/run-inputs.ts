/**
 * @module The input files and stdin of a `skill_run` call (docs/architecture.md §8, "A run's workspace"): decoded,
 * checked by the same rules the runner applies again (shared/run-io.ts), and digested. The preview
 * the person approves names each input by path, size and sha256; only the run request carries the
 * bytes, and the runner checks them against what was approved.
 */
import * as z from 'zod';
import { SkillMcpError } from '../../shared/errors.js';
import type { Inputs } from '../../shared/protocol.js';
import { digestInputs, inputsRefusal, MAX_INPUT_FILES } from '../../shared/run-io.js';
import type { InputFile } from '../../shared/run-io.js';

/** The tool's `files` entries: a relative path and exactly one of `base64` or `text`. */
export const fileInputSchema = z.object({
  path: z.string().describe('Relative path in the run\'s working directory, e.g. "form.pdf" or "in/notes.txt"'),
  base64: z.string().optional().describe("The file's bytes in base64 (binary files)"),
  text: z.string().optional().describe("The file's text, written as UTF-8"),
});
export type FileInput = z.infer<typeof fileInputSchema>;

export interface DecodedInputs {
  files: InputFile[];
  stdin: Uint8Array | undefined;
  /** What the preview shows and the token binds; undefined when the run has no inputs. */
  inputs: Inputs | undefined;
}

/**
 * Decodes base64, refusing what is not. Security: Buffer.from(…, 'base64') skips characters it does
 * not know (whitespace, `!`, a `=` in the middle) instead of failing; each skipped character makes
 * the result shorter than the text's length implies, so comparing the two lengths refuses them —
 * the bytes written are exactly the ones the text spells. Linear and native: a regular expression
 * over 20 MiB of text cost tens of milliseconds (a repeated group even overflowed the stack).
 * The URL-safe alphabet (`-`, `_`) is accepted as what it spells.
 */
function decodeBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === (text.length / 4) * 3 - padding ? bytes : undefined;
}

function bytesOf(file: FileInput): Uint8Array {
  const named = JSON.stringify(file.path);
  if ((file.base64 === undefined) === (file.text === undefined))
    throw new SkillMcpError('BAD_REQUEST', `the input file ${named} needs exactly one of "base64" or "text"; nothing was run`);
  if (file.text !== undefined) return Buffer.from(file.text, 'utf8');
  const bytes = decodeBase64(file.base64!);
  if (bytes === undefined)
    throw new SkillMcpError(
      'BAD_REQUEST',
      `the "base64" of input file ${named} is not valid base64 (A-Z a-z 0-9 + /, padded with =, no line breaks); nothing was run`,
    );
  return bytes;
}

/** Decodes and checks the inputs of one call; throws a refusal naming what to fix. */
export function decodeInputs(files: readonly FileInput[] | undefined, stdin: string | undefined, limitBytes: number): DecodedInputs {
  const list = files ?? [];
  if (list.length > MAX_INPUT_FILES)
    throw new SkillMcpError('TOO_LARGE', `${list.length} input files; at most ${MAX_INPUT_FILES} may be sent with one run`);
  const decoded = list.map((file) => ({ path: file.path, bytes: bytesOf(file) }));
  const stdinBytes = stdin !== undefined ? Buffer.from(stdin, 'utf8') : undefined;
  const bad = inputsRefusal(
    decoded.map((f) => f.path),
    decoded.map((f) => f.bytes.length),
    stdinBytes?.length ?? 0,
    limitBytes,
  );
  if (bad) throw new SkillMcpError(bad.code, bad.message);
  const none = decoded.length === 0 && stdinBytes === undefined;
  return { files: decoded, stdin: stdinBytes, inputs: none ? undefined : digestInputs(decoded, stdinBytes) };
}
