/**
 * @module The approval page's HTML (docs/hosting.md, "The approval page"): small, self-contained
 * documents — no script, no external asset, inline style only — under a CSP that allows nothing
 * else and no framing. Every value shown is escaped: the preview holds a skill's own words and the
 * model's arguments, either of which may try to be markup.
 */
import type { WillRun } from '../../shared/protocol.js';
import { formatRule } from '../../shared/egress-rules.js';

/**
 * Security: `default-src 'none'` — no script, image, font or connection at all; inline style only;
 * forms post to this origin only; no framing (clickjacking an Approve button); no <base> tricks.
 */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Escapes text for an HTML text node or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** The headers every page answer carries. */
export function pageHeaders(extra: Record<string, string> = {}): Headers {
  const headers = new Headers({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': PAGE_CSP,
    // Security: the address holds the approval id: never in a cache, never in a Referer sent to
    // another origin. `same-origin`, not `no-referrer`: under no-referrer a browser posts the
    // page's own forms with `Origin: null`, and the Origin check refuses them.
    'cache-control': 'no-store',
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  });
  for (const [name, value] of Object.entries(extra)) headers.append(name, value);
  return headers;
}

const STYLE =
  'body{font:15px/1.45 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#111}' +
  'table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.3rem .5rem;border-bottom:1px solid #ddd}' +
  'th{width:12rem;font-weight:600}code{font:13px ui-monospace,monospace;word-break:break-all}.warn{color:#8a1c00;font-weight:600}' +
  'form{display:inline-block;margin:1rem 1rem 0 0}button{font-size:1rem;padding:.5rem 1.4rem}';

function document(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function htmlPage(status: number, title: string, body: string, headers: Record<string, string> = {}): Response {
  return new Response(document(title, body), { status, headers: pageHeaders(headers) });
}

/** A page that only says something: refusals, outcomes, expired links. */
export function messagePage(status: number, title: string, text: string, headers: Record<string, string> = {}): Response {
  return htmlPage(status, title, `<h1>${escapeHtml(title)}</h1><p id="message">${escapeHtml(text)}</p>`, headers);
}

const code = (text: string): string => `<code>${escapeHtml(text)}</code>`;

function row(label: string, value: string): string {
  return `<tr><th>${escapeHtml(label)}</th><td>${value}</td></tr>`;
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 ** 2 ? `${Math.round(bytes / 1024 ** 2)} MiB` : `${bytes} bytes`;
}

/** The preview as a table: the same willRun the runner bound the token to, every digest in full. */
export function previewTable(willRun: WillRun): string {
  const rows = [
    row('skill', code(willRun.skill)),
    row('script', code(willRun.argv[0] ?? '')),
    row('interpreter', code(willRun.interpreter)),
    row(
      'arguments',
      willRun.argv.length > 1
        ? willRun.argv
            .slice(1)
            .map((a, i) => `${i + 1}. ${code(a)}`)
            .join('<br>')
        : '(none)',
    ),
    row('working directory', code(willRun.cwd)),
    row(
      'declared by',
      escapeHtml(
        willRun.declarationFrom === 'operator'
          ? `the operator${willRun.declarationPinned ? ' (pinned to these files)' : ''}`
          : willRun.declarationFrom === 'sidecar'
            ? 'the skill (mcp-host.yaml)'
            : 'the skill (SKILL.md frontmatter)',
      ),
    ),
    row('script digest', code(`sha256:${willRun.content.script}`)),
    row(
      'skill files digest',
      `${code(`sha256:${willRun.content.files}`)} (${willRun.content.fileCount} files, ${willRun.content.bytes} bytes — the run is a copy of exactly these bytes)`,
    ),
    row('input files', inputsCell(willRun)),
    row('environment variables', willRun.envNames.length > 0 ? willRun.envNames.map(code).join(', ') : '(none)'),
    row('network', networkCell(willRun)),
    row('isolation', `${code(willRun.isolation)} (${escapeHtml(willRun.sandbox.join(', ') || 'none')})`),
    row('timeout', `${Math.round(willRun.timeoutMs / 1000)} s`),
    row('memory cap', escapeHtml(formatBytes(willRun.memoryBytes))),
  ];
  if (willRun.secrets?.length || willRun.secretsNotBound?.length) rows.push(row('secrets', secretsCell(willRun)));
  if (willRun.data)
    rows.push(
      row(
        'data folder',
        `${code(willRun.data.folder)} — read and written by the script, kept between runs (quota ${willRun.data.bytes} bytes, ${willRun.data.files} entries)`,
      ),
    );
  if (willRun.deps?.length)
    rows.push(row('packages', willRun.deps.map((d) => `${escapeHtml(d.kind)} ${code(`sha256:${d.digest}`)}`).join('<br>')));
  const warnings = [
    willRun.isolation === 'same-uid'
      ? "No sandbox here: the script runs as the server's own user, with its files and its network."
      : undefined,
    willRun.envNotSet?.length ? `Granted but not set here: ${willRun.envNotSet.join(', ')}` : undefined,
    willRun.envWarning,
    willRun.egressNote,
    willRun.egressWarning,
    willRun.secretsWarning,
  ].filter((w): w is string => w !== undefined && w !== '');
  return `<table id="preview">${rows.join('')}</table>${warnings.map((w) => `<p class="warn">Warning: ${escapeHtml(w)}</p>`).join('')}`;
}

function inputsCell(willRun: WillRun): string {
  const inputs = willRun.inputs;
  if (inputs === undefined || (inputs.files.length === 0 && !inputs.stdin)) return '(none: the script starts in an empty workspace)';
  const lines = inputs.files.map((f) => `${code(f.path)} (${f.size} bytes, ${code(`sha256:${f.sha256}`)})`);
  if (inputs.stdin) lines.push(`stdin: ${inputs.stdin.size} bytes, ${code(`sha256:${inputs.stdin.sha256}`)}`);
  return lines.join('<br>');
}

/** Each secret by name, hosts and header (never a value): the run's proxy adds it, the script holds a placeholder. */
function secretsCell(willRun: WillRun): string {
  const lines = (willRun.secrets ?? []).map(
    (s) =>
      `${code(s.name)}: sent only to ${s.hosts.map(code).join(', ')} as ${code(`${s.header}: ${s.format}`)} by the run's proxy (the script holds a placeholder, never the value)`,
  );
  for (const s of willRun.secretsNotBound ?? []) lines.push(`${code(s.name)}: not given to this run (${escapeHtml(s.why)})`);
  return lines.join('<br>');
}

function networkCell(willRun: WillRun): string {
  const egress = willRun.egress ?? [];
  const rules = (willRun.egressRules ?? []).map(
    (set) => `<br>requests to ${code(set.entry)}: only ${set.allow.map((r) => code(formatRule(r))).join(', ')}`,
  );
  if (egress.length > 0)
    return `only ${egress.map(code).join(', ')}${willRun.egressNote ? ' (see the warning below)' : ", through the run's own proxy"}${rules.join('')}`;
  return willRun.isolation === 'uid' || willRun.isolation === 'same-uid' ? "not isolated (this machine's network)" : 'none';
}

export interface ApprovalView {
  id: string;
  willRun: WillRun;
  hash: string;
  csrf: string;
  /** Who asked, and who is looking, as the page names them. */
  requester: string;
  viewer: string;
  expiresAt: string;
}

/** The page itself: the preview and two POST forms, each carrying the CSRF token and the preview's hash. */
export function approvalPage(view: ApprovalView, headers: Record<string, string> = {}): Response {
  const action = `/approve/${encodeURIComponent(view.id)}`;
  const hidden = `<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}"><input type="hidden" name="h" value="${escapeHtml(view.hash)}">`;
  const body =
    `<h1>Approve this run?</h1>` +
    `<p>Requested by ${code(view.requester)}; you are signed in as ${code(view.viewer)}. This link expires at ${escapeHtml(view.expiresAt)} and works once.</p>` +
    previewTable(view.willRun) +
    `<form method="post" action="${action}">${hidden}<input type="hidden" name="decision" value="approve"><button id="approve" type="submit">Approve</button></form>` +
    `<form method="post" action="${action}">${hidden}<input type="hidden" name="decision" value="deny"><button id="deny" type="submit">Deny</button></form>`;
  return htmlPage(200, 'Approve this run?', body, headers);
}

/** The static token's sign-in: the token goes in a POST body, never in the address. */
export function bearerLoginPage(id: string, note?: string): Response {
  const body =
    `<h1>Sign in to approve a run</h1>${note ? `<p class="warn" id="message">${escapeHtml(note)}</p>` : ''}` +
    '<p>Enter the bearer token this server was configured with (SKILL_MCP_HTTP_TOKEN).</p>' +
    `<form method="post" action="/approve/${encodeURIComponent(id)}"><input type="hidden" name="login" value="bearer">` +
    '<input id="bearer" type="password" name="bearer" autocomplete="off" size="48" required> <button id="signin" type="submit">Sign in</button></form>';
  return htmlPage(note ? 401 : 200, 'Sign in', body);
}
