/**
 * @module The runner's wire format (docs/architecture.md §8): frames of shared/frame-codec.ts with
 * the caps of the runner's socket, checked before a single body byte is buffered.
 */
import { MAX_STREAM_BYTES } from './limits.js';
import { MAX_RUN_INPUT_BYTES, MAX_RUN_OUTPUT_FILES_BYTES } from './run-io.js';

/** Room for everything in a frame besides the file bytes: names, args, a token, a preview. */
const ENVELOPE_BYTES = 1024 * 1024;
/**
 * A run request carries its input files and stdin as raw bytes (msgpack binary, no base64), up to
 * the highest input total an owner may set (shared/run-io.ts); every other request is small.
 */
export const MAX_REQUEST_FRAME_BYTES = MAX_RUN_INPUT_BYTES + ENVELOPE_BYTES;
/** Responses carry up to two streams, the output files up to the highest budget an owner may set, and a preview. */
export const MAX_RESPONSE_FRAME_BYTES = MAX_RUN_OUTPUT_FILES_BYTES + 2 * MAX_STREAM_BYTES + ENVELOPE_BYTES;
export { FrameCodec } from './frame-codec.js';
export type { FrameEvent } from './frame-codec.js';
