/**
 * The audit trail as OCSF (cli/audit/ocsf.ts): each kind of line the runner writes about a run
 * becomes events of the right class with every attribute OCSF 1.3.0 requires of it, checked
 * against the class facts kept as test data (test/fixtures/ocsf-1.3.0.json); the checker itself
 * refuses an event missing any of them. A real log through the CLI: test/e2e/skill-run-egress-rules.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { toOcsf } from '../../cli/audit/ocsf.js';
import { ocsfProblems } from '../ocsf.js';

const SOURCE = { hostname: 'audit-host' };
const TS = '2026-12-07T07:00:00.000Z';
const ACCEPT = {
  seq: 7,
  ts: TS,
  prev: '0'.repeat(64),
  event: 'run.accept',
  run_id: 'r-1',
  token_id: 't-1',
  skill: 'rules',
  script: 'try.py',
  interpreter: 'python3',
  argv: ['try.py', '8443'],
  env_names: [],
  requester: 'alice',
  requester_from: 'oauth',
  approval: { channel: 'approval-page', approver: 'bob' },
  grant: { from: 'MCP_SKILL_RUN', rows: [0] },
  will_run_sha256: 'a'.repeat(64),
};

function valid(events: Record<string, unknown>[]): Record<string, unknown>[] {
  for (const event of events) expect({ event, problems: ocsfProblems(event) }).toMatchObject({ problems: [] });
  return events;
}

describe('audit lines as OCSF 1.3.0 events', () => {
  it('an accepted run: Process Activity Launch by its requester, and Authorize Session for the approval and grant', () => {
    const [launch, approval] = valid(toOcsf(ACCEPT, SOURCE));
    expect(launch).toMatchObject({
      class_uid: 1007,
      activity_id: 1,
      type_uid: 100701,
      time: Date.parse(TS),
      actor: { user: { name: 'alice' } },
      device: { type_id: 1, hostname: 'audit-host' },
      process: { uid: 'r-1', name: 'rules/try.py', cmd_line: 'python3 try.py 8443' },
      metadata: { version: '1.3.0', product: { name: 'skill-mcp', vendor_name: 'skill-mcp' }, uid: '7', correlation_uid: 'r-1' },
    });
    expect(approval).toMatchObject({
      class_uid: 3003,
      activity_id: 1,
      user: { name: 'alice' },
      privileges: ['run rules/try.py'],
      unmapped: { approval: { channel: 'approval-page', approver: 'bob' }, grant: { from: 'MCP_SKILL_RUN', rows: [0] } },
    });
  });

  it('a run without a known requester (standalone, no OS user) still names an actor', () => {
    const { requester: _r, requester_from: _f, approval: _a, ...anonymous } = ACCEPT;
    const [launch, approval] = valid(toOcsf(anonymous, SOURCE));
    expect(launch).toMatchObject({ actor: { app_name: 'skill-mcp' } });
    expect(approval).toMatchObject({ user: { name: 'unknown' } });
  });

  it('an exit: Process Activity Terminate, success only for exit 0; a timeout or a signal is a failure', () => {
    const exit = { seq: 9, ts: TS, event: 'run.exit', run_id: 'r-1', exit_code: 0, signal: null, ended: 'exit' };
    expect(valid(toOcsf(exit, SOURCE))[0]).toMatchObject({ class_uid: 1007, activity_id: 2, status_id: 1, exit_code: 0 });
    expect(valid(toOcsf({ ...exit, exit_code: 3 }, SOURCE))[0]).toMatchObject({ status_id: 2, exit_code: 3 });
    expect(valid(toOcsf({ ...exit, exit_code: null, signal: 'SIGKILL', ended: 'timeout' }, SOURCE))[0]).toMatchObject({
      status_id: 2,
      status_detail: 'timeout (timeout)',
    });
  });

  it('a refused run: Process Activity Launch, status Failure, the reason in status_detail', () => {
    const reject = { seq: 3, ts: TS, event: 'run.reject', reason: 'draft-changed', skill: 'rules', script: 'try.py', requester: 'alice' };
    expect(valid(toOcsf(reject, SOURCE))[0]).toMatchObject({
      class_uid: 1007,
      activity_id: 1,
      status_id: 2,
      status_detail: 'draft-changed',
    });
  });

  it('egress requests: HTTP Activity by method, the path without a query, the rule or the refusal, status and bytes', () => {
    const request = {
      seq: 8,
      ts: TS,
      event: 'egress.request',
      run_id: 'r-1',
      destination: 'api.example.com:443',
      method: 'GET',
      path: '/v1/items/42',
      decision: 'allowed',
      rule: 'GET /v1/items/*',
      status: 200,
      bytes_up: 0,
      bytes_down: 3,
    };
    expect(valid(toOcsf(request, SOURCE))[0]).toMatchObject({
      class_uid: 4002,
      activity_id: 3,
      dst_endpoint: { hostname: 'api.example.com', port: 443 },
      http_request: { http_method: 'GET', url: { path: '/v1/items/42', hostname: 'api.example.com', port: 443 } },
      http_response: { code: 200 },
      traffic: { bytes_out: 0, bytes_in: 3 },
      status_id: 1,
      status_detail: 'allowed by the rule GET /v1/items/*',
    });
    const refused = { ...request, method: 'DELETE', decision: 'refused', reason: 'no-rule', status: 403, rule: undefined };
    expect(valid(toOcsf(refused, SOURCE))[0]).toMatchObject({ activity_id: 2, status_id: 2, http_response: { code: 403 } });
    // A parser refusal has no method; a cut connection no status; an address host is an ip.
    const malformed = {
      ...request,
      destination: '127.0.0.1:8443',
      method: '',
      path: '',
      decision: 'refused',
      reason: 'malformed',
      status: undefined,
    };
    expect(valid(toOcsf(malformed, SOURCE))[0]).toMatchObject({
      activity_id: 99,
      dst_endpoint: { ip: '127.0.0.1', port: 8443 },
      http_response: { code: 0 },
      status_detail: 'refused: malformed (no response)',
    });
  });

  it('proxied connections: Network Activity, Close when allowed, Refuse when refused, Fail when unreachable', () => {
    const connection = {
      seq: 5,
      ts: TS,
      event: 'egress',
      run_id: 'r-1',
      destination: 'api.example.com:443',
      method: 'CONNECT',
      decision: 'allowed',
      entry: 'api.example.com:443',
      address: '93.184.216.34',
      bytes_up: 517,
      bytes_down: 4096,
      duration_ms: 12,
    };
    expect(valid(toOcsf(connection, SOURCE))[0]).toMatchObject({
      class_uid: 4001,
      activity_id: 2,
      dst_endpoint: { hostname: 'api.example.com', port: 443 },
      traffic: { bytes_out: 517, bytes_in: 4096 },
      status_id: 1,
    });
    const refused = { ...connection, decision: 'refused', reason: 'not-allowed', entry: undefined };
    expect(valid(toOcsf(refused, SOURCE))[0]).toMatchObject({ activity_id: 5, status_id: 2, status_detail: 'refused: not-allowed' });
    expect(valid(toOcsf({ ...connection, reason: 'connect-failed' }, SOURCE))[0]).toMatchObject({ activity_id: 4, status_id: 2 });
    const atAccept = { ...connection, destination: '', method: '', decision: 'refused', reason: 'too-many-open' };
    expect(valid(toOcsf(atAccept, SOURCE))[0]).toMatchObject({ dst_endpoint: { name: '(not read)' } });
  });

  it('lines with no class here give no event (the CLI counts them)', () => {
    for (const event of ['runner.start', 'run.prepare', 'audit.checkpoint']) expect(toOcsf({ seq: 1, ts: TS, event }, SOURCE)).toEqual([]);
  });

  it('the checker is no blank cheque: it refuses an event missing a required attribute of its base, class or objects', () => {
    const [launch] = toOcsf(ACCEPT, SOURCE) as [Record<string, unknown>];
    const without = (key: string): Record<string, unknown> => Object.fromEntries(Object.entries(launch).filter(([k]) => k !== key));
    expect(ocsfProblems(without('severity_id'))).toContain('severity_id is required (base event)');
    expect(ocsfProblems(without('device'))).toContain('device is required (Process Activity)');
    expect(ocsfProblems({ ...launch, type_uid: 100702 })).toContain('type_uid is not class_uid * 100 + activity_id');
    expect(ocsfProblems({ ...launch, device: { hostname: 'h' } })).toContain('device.type_id is required (device)');
    expect(ocsfProblems({ ...launch, metadata: { version: '1.3.0', product: { name: 'skill-mcp' } } })).toContain(
      'metadata.product.vendor_name is required (product)',
    );
    expect(ocsfProblems({ ...launch, process: { name: 'x' } })).toContain('process needs at least one of pid, uid (process)');
    const [, approval] = toOcsf(ACCEPT, SOURCE) as [unknown, Record<string, unknown>];
    expect(ocsfProblems({ ...approval, group: { name: 'g' } })).toContain('exactly one of privileges, group (Authorize Session)');
  });
});
