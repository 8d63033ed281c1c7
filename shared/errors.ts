/**
 * @module The one error type both processes use. `code` is stable for code to branch on;
 * `message` is safe for the model to read (no host paths, no secrets) and says what to do next.
 * Anything else belongs in `cause`, which never crosses to the client.
 */

export type ErrorCode =
  // path and read errors
  | 'INVALID_PATH'
  | 'NOT_FOUND'
  | 'NOT_A_FILE'
  | 'OUTSIDE_SKILL'
  | 'TOO_LARGE'
  | 'READ_FAILED'
  | 'UNKNOWN_SKILL'
  | 'BATCH_LIMIT'
  // catalog browsing (skill_list pages, skill_search)
  | 'INVALID_CURSOR'
  | 'INVALID_QUERY'
  // run refusals
  | 'NOT_DECLARED'
  | 'NOT_GRANTED'
  | 'INTERPRETER_UNAVAILABLE'
  | 'ENVIRON_UNSCRUBBED'
  | 'RUNNER_UNAVAILABLE'
  | 'BUSY'
  | 'CANCELLED'
  | 'SANDBOX_UNAVAILABLE'
  /** The run's sandbox could not be built (bubblewrap's setup failed): the script never started (runner/sandbox/start-failure.ts). */
  | 'SANDBOX_FAILED'
  | 'CONFIRM_REFUSED'
  // the approval page (server/approve/)
  | 'APPROVAL_REQUIRED'
  | 'APPROVAL_PENDING'
  | 'APPROVAL_DENIED'
  | 'CONFIG_MISMATCH'
  | 'CONTENT_MISMATCH'
  | 'AUTH_REQUIRED'
  | 'LEDGER_UNAVAILABLE'
  | 'DEPS_MISSING'
  /** A secret the run uses has no usable value for this caller (runner/secrets/source.ts): nothing runs. */
  | 'SECRET_MISSING'
  | 'AUDIT_UNAVAILABLE'
  /** The skill's data folder is over its quota (docs/isolation.md, "Data folders"): nothing runs until space is freed. */
  | 'DATA_FULL'
  /** skill_data_clear of a skill that keeps no data folder for this caller: nothing to clear. */
  | 'NO_DATA_FOLDER'
  // tokens (docs/architecture.md §7)
  | 'TOKEN_INVALID'
  | 'TOKEN_EXPIRED'
  | 'TOKEN_REUSED'
  | 'DRAFT_CHANGED'
  // runner protocol
  | 'BAD_FRAME'
  | 'FRAME_TOO_LARGE'
  | 'BAD_REQUEST'
  | 'PEER_REFUSED'
  | 'INTERNAL';

export class SkillMcpError extends Error {
  override readonly name = 'SkillMcpError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isSkillMcpError(value: unknown): value is SkillMcpError {
  return value instanceof SkillMcpError;
}
