/**
 * @module The audit log's line types (docs/audit.md lists every field; docs/audit.schema.json is
 * their schema). Callers pass names, counts and hashes only: never token material or secret values.
 */
import type { EgressRecord, RequestRecord } from '../egress/helper-protocol.js';

/** The enumerated reasons of `run.reject` (stable for people and tools reading the log). */
export type RejectReason =
  | 'busy'
  | 'token-invalid'
  | 'token-expired'
  | 'token-reused'
  | 'draft-changed'
  | 'unknown-skill'
  | 'not-declared'
  | 'not-granted'
  | 'invalid-path'
  | 'not-found'
  | 'not-a-file'
  | 'outside-skill'
  | 'interpreter-unavailable'
  | 'environ-unscrubbed'
  | 'sandbox-failed'
  | 'too-large'
  | 'content-unreadable'
  | 'cancelled'
  | 'ledger-unavailable'
  | 'audit-unavailable'
  | 'deps-missing'
  | 'secret-missing'
  | 'secrets-unavailable'
  | 'data-full'
  | 'internal';

/** Who asked and how the yes reached the front: on every line about a run request. */
export interface RunWho {
  /** The verified identity's subject (hosted with OAuth), else the runner's OS user (standalone); absent when neither is known. */
  requester?: string;
  requester_from?: 'oauth' | 'os-user';
  /** How the person's approval reached the front, as the front says (the runner cannot check it). */
  approval?: { channel: string; approver?: string };
  /** The W3C trace context the request came under, when the client sent one (joins the front's logs). */
  traceparent?: string;
}

/** Which rule allowed the script: `MCP_SKILL_RUN` rows (0-based indexes into its array) or the skill's own declaration (standalone). */
export interface RunGrant {
  grant?: { from: 'MCP_SKILL_RUN'; rows: number[] } | { from: 'declaration' };
  declaration_from?: string;
}

/** The inputs of an accepted run (runner/workspace/workspace.ts): names, sizes and digests only. */
export interface RunInputsAudit {
  inputs?: { path: string; size: number; sha256: string }[];
  stdin_bytes?: number;
  stdin_sha256?: string;
}

export type AuditEvent =
  | { event: 'runner.start'; [key: string]: unknown }
  | {
      event: 'runner.stop';
      pid: number;
      config_sha256: string;
      uptime_ms: number;
      lines: number;
      why: string;
      removals_pending?: number;
      spawn_fallbacks?: number;
    }
  | { event: 'peer.refuse'; uid: number; gid: number; pid: number; reason?: 'front-secret' }
  | ({
      event: 'run.prepare';
      skill: string;
      script: string;
      token_id?: string;
      refused?: string;
      will_run_sha256?: string;
      draft_changed?: true;
    } & RunWho)
  | ({
      event: 'run.reject';
      reason: RejectReason;
      skill?: string;
      script?: string;
      token_id?: string;
      run_id?: string;
      client?: string;
      running?: number;
      max_runs?: number;
      queued?: number;
      client_running?: number;
      client_share?: number;
      waited_ms?: number;
      error?: string;
    } & RunWho)
  | {
      event: 'run.wait';
      run_id: string;
      skill: string;
      script: string;
      client: string;
      running: number;
      queued: number;
      /** Waiting for its turn at this data folder (runner/data/locks.ts), not for a slot. */
      data_folder?: string;
    }
  | ({
      event: 'run.accept';
      run_id: string;
      runner_pid: number;
      token_id: string;
      skill: string;
      script: string;
      interpreter: string;
      argv: string[];
      env_names: string[];
      timeout_ms: number;
      isolation: string;
      sandbox: string[];
      memory_bytes: number;
      uid: number;
      script_sha256?: string;
      files_sha256?: string;
      will_run_sha256?: string;
      egress?: string[];
      egress_mode?: string;
      deps?: string[];
      secrets?: { name: string; hosts: string[] }[];
      client?: string;
      queued_ms?: number;
      runs_in_progress?: number;
    } & RunInputsAudit &
      RunWho &
      RunGrant)
  | { event: 'run.exit'; run_id: string; [key: string]: unknown }
  | { event: 'run.cleanup'; run_id: string; workspace_unmount?: 'lazy'; workspace_left?: true; copy_left?: true }
  | ({ event: 'egress'; run_id: string } & EgressRecord)
  | ({ event: 'egress.request'; run_id: string } & RequestRecord)
  | { event: 'ledger.unavailable'; ledger: 'redis'; redis: string; why: string }
  | { event: 'ledger.restored'; ledger: 'redis'; redis: string; down_ms: number }
  | { event: 'token.released'; token_id: string }
  | ({
      event: 'data.clear';
      skill: string;
      /** `<skill>/<who>`: `anyone`, or `s-` and the subject's tag — the subject itself is `requester`. */
      data_folder: string;
      token_id?: string;
      /** Why nothing was removed (the token, the folder's turn, the ledger). */
      refused?: string;
      entries_removed?: number;
      bytes_removed?: number;
      entries_left?: number;
      bytes_left?: number;
      incomplete?: true;
    } & RunWho);

/** Lines the writer makes itself (never passed in by callers). */
export type WriterEvent =
  | {
      event: 'audit.gap';
      lost: number;
      lost_events: Record<string, number>;
      delayed: number;
      refused: number;
      error: string;
      from: string;
      to: string;
    }
  | { event: 'audit.checkpoint'; head_seq: number; head_sha256: string; key_id: string; sig: string }
  | { event: 'audit.segment'; previous: string; previous_seq: number; previous_sha256: string; removed?: string[] };

/** Lines of an accepted run that are never dropped while the log cannot be written (kept until it can). */
export const KEPT_EVENTS: ReadonlySet<string> = new Set(['run.exit', 'egress', 'egress.request', 'run.reject']);
/** Lines after which the writer appends a signed checkpoint: a run decided, or the runner stopping. */
export const CHECKPOINT_AFTER: ReadonlySet<string> = new Set(['run.exit', 'run.reject', 'runner.stop']);
