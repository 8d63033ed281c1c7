/**
 * @module The audit trail as OCSF 1.3.0 events (docs/audit.md, "OCSF"): `skill-mcp audit query
 * --format ocsf`. Pure: one audit line in, zero or more OCSF events out, each carrying every
 * attribute its class requires (test/runner/audit-ocsf.test.ts checks them against the class
 * definitions kept as test data).
 *
 * - `run.accept` → Process Activity (1007) Launch, and Authorize Session (3003) Assign Privileges:
 *   the approval and the grant that let the requester run this one script;
 * - `run.exit` → Process Activity Terminate; `run.reject` → Process Activity Launch, status Failure;
 * - `egress` → Network Activity (4001), one per proxied connection: Close when it was allowed and
 *   ended, Refuse when policy refused it, Fail when it could not be reached; host, port, bytes;
 * - `egress.request` → HTTP Activity (4002), one per request to a host with rules: method, host,
 *   port, path (never a query), status, the rule it matched or why it was refused, bytes.
 *
 * Other lines (the runner's own, previews, the log's checkpoints) have no event here: the caller
 * counts them and says so.
 */

import { outcomesOf } from './outcomes.js';

/** The OCSF version the events follow. */
export const OCSF_VERSION = '1.3.0';
const PRODUCT = { name: 'skill-mcp', vendor_name: 'skill-mcp' };
/** HTTP Activity's activity_id by method; any other method is 99 (Other). */
const HTTP_ACTIVITY: Record<string, number> = { CONNECT: 1, DELETE: 2, GET: 3, HEAD: 4, OPTIONS: 5, POST: 6, PUT: 7, TRACE: 8 };
const SEVERITY_INFORMATIONAL = 1;
const STATUS = { success: 1, failure: 2 } as const;

type Line = Record<string, unknown>;
export type OcsfEvent = Record<string, unknown>;

/** Where the events are said to come from: the machine the log was read on. */
export interface OcsfSource {
  hostname: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The attributes every event has: classification, time, severity, metadata (the line's seq ties it to the signed log). */
function base(line: Line, classUid: number, categoryUid: number, activityId: number, n = 0): OcsfEvent {
  const seq = typeof line['seq'] === 'number' ? line['seq'] : 0;
  const runId = text(line['run_id']);
  return {
    class_uid: classUid,
    category_uid: categoryUid,
    activity_id: activityId,
    type_uid: classUid * 100 + activityId,
    time: Date.parse(String(line['ts'])),
    severity_id: SEVERITY_INFORMATIONAL,
    metadata: {
      version: OCSF_VERSION,
      product: PRODUCT,
      uid: n === 0 ? String(seq) : `${seq}.${n}`,
      log_name: 'skill-mcp audit',
      original_time: String(line['ts']),
      ...(runId !== undefined ? { correlation_uid: runId } : {}),
    },
  };
}

/** Who asked for the run: the verified subject (hosted) or the runner's OS user (standalone); else the front, unnamed. */
function requester(line: Line): { user: { name: string } } | { app_name: string } {
  const who = text(line['requester']);
  return who !== undefined ? { user: { name: who } } : { app_name: 'skill-mcp' };
}

function processOf(line: Line): OcsfEvent {
  const argv = Array.isArray(line['argv']) ? line['argv'].map(String) : [];
  const interpreter = text(line['interpreter']);
  const skill = text(line['skill']);
  const script = text(line['script']);
  return {
    // The run id names the run across its lines; the OS pid is not in the log.
    uid: text(line['run_id']) ?? `rejected-${String(line['seq'])}`,
    ...(skill !== undefined && script !== undefined ? { name: `${skill}/${script}` } : {}),
    ...(interpreter !== undefined ? { cmd_line: [interpreter, ...argv].join(' ') } : {}),
  };
}

function device(source: OcsfSource): OcsfEvent {
  return { type_id: 1, type: 'Server', hostname: source.hostname };
}

function processActivity(line: Line, source: OcsfSource, activityId: 1 | 2, ok: boolean, detail?: string): OcsfEvent {
  return {
    ...base(line, 1007, 1, activityId),
    actor: activityId === 2 ? { app_name: 'skill-mcp runner' } : requester(line),
    device: device(source),
    process: processOf(line),
    status_id: ok ? STATUS.success : STATUS.failure,
    ...(detail !== undefined ? { status_detail: detail } : {}),
  };
}

/** The approval and grant of an accepted run, as privileges assigned to its requester for that one run. */
function authorization(line: Line): OcsfEvent {
  const approval = line['approval'] as { channel?: string; approver?: string } | undefined;
  const grant = line['grant'] as { from?: string } | undefined;
  const who = text(line['requester']) ?? approval?.approver ?? 'unknown';
  return {
    ...base(line, 3003, 3, 1, 1),
    user: { name: who },
    privileges: [`run ${String(line['skill'])}/${String(line['script'])}`],
    status_id: STATUS.success,
    message: `approved${approval?.channel ? ` by ${approval.channel}` : ''}${approval?.approver ? ` (${approval.approver})` : ''}; granted by ${grant?.from ?? 'the declaration'}`,
    unmapped: {
      ...(approval ? { approval } : {}),
      ...(grant ? { grant } : {}),
      ...(typeof line['will_run_sha256'] === 'string' ? { will_run_sha256: line['will_run_sha256'] } : {}),
    },
  };
}

/** `host:port` or `[v6]:port` of a request line. */
function endpoint(destination: string): OcsfEvent {
  const match = /^\[?(.*?)\]?:(\d{1,5})$/.exec(destination);
  const host = match ? match[1]! : destination;
  const port = match ? Number(match[2]) : undefined;
  const isIp = /^[\d.]+$/.test(host) || host.includes(':');
  return { ...(isIp ? { ip: host } : { hostname: host }), ...(port !== undefined ? { port } : {}) };
}

function httpActivity(line: Line): OcsfEvent {
  const method = String(line['method'] ?? '');
  const allowed = line['decision'] === 'allowed';
  const dst = endpoint(String(line['destination'] ?? ''));
  const status = typeof line['status'] === 'number' ? line['status'] : undefined;
  const path = String(line['path'] ?? '');
  const host = { ...(dst['hostname'] ? { hostname: dst['hostname'] } : {}), ...(dst['port'] ? { port: dst['port'] } : {}) };
  return {
    ...base(line, 4002, 4, HTTP_ACTIVITY[method] ?? 99),
    dst_endpoint: dst,
    // The path only: a query's values never reach the log. A request the parser could not read has none.
    http_request: { http_method: method, ...(path !== '' ? { url: { path, ...host } } : {}) },
    // No answer reached the script (the connection was cut): code 0, said in status_detail.
    http_response: { code: status ?? 0 },
    ...(status !== undefined ? { http_status: status } : {}),
    traffic: { bytes_out: Number(line['bytes_up'] ?? 0), bytes_in: Number(line['bytes_down'] ?? 0) },
    status_id: allowed ? STATUS.success : STATUS.failure,
    status_detail: allowed
      ? `allowed by the rule ${String(line['rule'])}`
      : `refused: ${String(line['reason'])}${status === undefined ? ' (no response)' : ''}`,
  };
}

/** One proxied connection (an `egress` line): allowed and ended, refused by policy, or not reachable. */
function networkActivity(line: Line): OcsfEvent {
  const reason = text(line['reason']);
  const refused = line['decision'] === 'refused';
  const failed = reason === 'connect-failed';
  const destination = String(line['destination'] ?? '');
  const entry = text(line['entry']);
  return {
    ...base(line, 4001, 4, refused ? 5 : failed ? 4 : 2),
    // A connection closed at accept (over the run's open connections) named no destination.
    dst_endpoint: destination === '' ? { name: '(not read)' } : endpoint(destination),
    traffic: { bytes_out: Number(line['bytes_up'] ?? 0), bytes_in: Number(line['bytes_down'] ?? 0) },
    ...(typeof line['duration_ms'] === 'number' ? { duration: line['duration_ms'] } : {}),
    status_id: refused || failed ? STATUS.failure : STATUS.success,
    status_detail: refused || failed ? `${refused ? 'refused' : 'failed'}: ${String(reason)}` : `allowed by the entry ${String(entry)}`,
    ...(line['intercepted'] === true ? { unmapped: { intercepted: true, requests: line['requests'] } } : {}),
  };
}

/** The OCSF events of one audit line (none: the line has no class here). */
export function toOcsf(line: Line, source: OcsfSource): OcsfEvent[] {
  switch (line['event']) {
    case 'run.accept':
      return [processActivity(line, source, 1, true), authorization(line)];
    case 'run.exit': {
      const code = typeof line['exit_code'] === 'number' ? line['exit_code'] : undefined;
      const outcome = outcomesOf(line)[0];
      const event = processActivity(line, source, 2, outcome === 'ok', `${outcome ?? 'ended'} (${String(line['ended'])})`);
      return [code !== undefined ? { ...event, exit_code: code } : event];
    }
    case 'run.reject':
      return [processActivity(line, source, 1, false, text(line['reason']))];
    case 'egress':
      return [networkActivity(line)];
    case 'egress.request':
      return [httpActivity(line)];
    default:
      return [];
  }
}
