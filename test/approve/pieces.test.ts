/**
 * The approval page's small security pieces, alone: the sealed session (MAC before claims, expiry),
 * the CSRF token's binding to one sign-in and one approval, the store's once-only decision and
 * expiry, the page's escaping of a hostile preview, and the sign-in limits (a flood is refused,
 * never paid for by evicting someone else's sign-in).
 */
import { describe, expect, test } from 'vitest';
import type { Minted } from '../../shared/protocol.js';
import { ApprovalStore, APPROVAL_ID, logId } from '../../server/approve/store.js';
import { Sealer } from '../../server/approve/seal.js';
import { approvalPage, escapeHtml, PAGE_CSP } from '../../server/approve/page.js';
import { cookieValue } from '../../server/approve/desk.js';
import { LOGIN_LIMITS, loginAddressKey, OAuthLogin, type LoginLimits } from '../../server/approve/login.js';
import { readApprovalSettings } from '../../server/approve/settings.js';
import type { SettingIssue } from '../../shared/settings-schema.js';

function minted(expiresAtMs: number, arg = 'x'): Minted {
  return {
    confirmToken: `smt1.${arg}.${expiresAtMs}`,
    expiresAt: new Date(expiresAtMs).toISOString(),
    willRun: {
      skill: 'demo',
      interpreter: 'node',
      argv: ['scripts/a.js', arg],
      cwd: 'skills/demo',
      timeoutMs: 30_000,
      envNames: [],
      isolation: 'namespace',
      sandbox: ['bwrap'],
      memoryBytes: 512 * 1024 ** 2,
      content: { script: 'a'.repeat(64), files: 'b'.repeat(64), fileCount: 2, bytes: 10 },
      declarationFrom: 'sidecar',
    },
  };
}

describe('sealed session', () => {
  test('a changed claim breaks the MAC (a cookie cannot be edited into an approver)', () => {
    const sealer = new Sealer();
    const sealed = sealer.seal(sealer.newSession('bob', ['skills:read']));
    expect(sealer.open(sealed)?.sub).toBe('bob');
    const [body, tag] = sealed.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8'));
    const edited = Buffer.from(JSON.stringify({ ...claims, scopes: ['skills:approve'] })).toString('base64url');
    expect(sealer.open(`${edited}.${tag}`)).toBeUndefined();
    expect(sealer.open(`${body}.${tag}.x`)).toBeUndefined();
    expect(sealer.open('')).toBeUndefined();
  });

  test("another process's key opens nothing; an expired session is no session", () => {
    let now = 1_000_000;
    const sealer = new Sealer(undefined, () => now);
    const sealed = sealer.seal(sealer.newSession('alice', []));
    expect(new Sealer().open(sealed)).toBeUndefined();
    now += 600_001;
    expect(sealer.open(sealed)).toBeUndefined();
  });

  test('a CSRF token is bound to its sign-in and its approval', () => {
    const sealer = new Sealer();
    const a = sealer.newSession('alice', []);
    const b = sealer.newSession('alice', []);
    const token = sealer.csrf(a, 'id-1');
    expect(sealer.csrfValid(a, 'id-1', token)).toBe(true);
    expect(sealer.csrfValid(b, 'id-1', token)).toBe(false);
    expect(sealer.csrfValid(a, 'id-2', token)).toBe(false);
    expect(sealer.csrfValid(a, 'id-1', null)).toBe(false);
    expect(sealer.csrfValid(a, 'id-1', '')).toBe(false);
  });
});

describe('approval store', () => {
  test('ids are 256-bit base64url, unique, and a lookup by a malformed id finds nothing', () => {
    const store = new ApprovalStore();
    const ids = new Set(Array.from({ length: 200 }, (_, i) => store.open(minted(Date.now() + 60_000, String(i)), {})!.id));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(APPROVAL_ID);
    expect(store.get('../x')).toBeUndefined();
    expect(logId([...ids][0]!)).not.toContain([...ids][0]!.slice(0, 12));
  });

  test('a decision is made once: a replayed approve, or a deny after approve, changes nothing', () => {
    const store = new ApprovalStore();
    const record = store.open(minted(Date.now() + 60_000), { subject: 'alice' })!;
    expect(store.decide(record, 'approved', 'alice')).toBe('ok');
    expect(store.decide(record, 'approved', 'mallory')).toBe('decided');
    expect(store.decide(record, 'denied', 'mallory')).toBe('decided');
    expect(record).toMatchObject({ status: 'approved', approver: 'alice' });
    expect(store.forToken(record.minted.confirmToken)).toBe(record);
  });

  test('an expired record decides nothing', () => {
    let now = 1_000_000;
    const store = new ApprovalStore({ now: () => now });
    const record = store.open(minted(now + 1_000), {})!;
    now += 1_000;
    expect(store.decide(record, 'approved', 'alice')).toBe('expired');
    expect(record.status).toBe('pending');
  });

  test('a full store opens no more records (a preview loop cannot grow the process)', () => {
    const store = new ApprovalStore({ max: 2 });
    expect(store.open(minted(Date.now() + 60_000, '1'), {})).toBeDefined();
    expect(store.open(minted(Date.now() + 60_000, '2'), {})).toBeDefined();
    expect(store.open(minted(Date.now() + 60_000, '3'), {})).toBeUndefined();
  });

  test('a waiter wakes on the decision, not on a timer', async () => {
    const store = new ApprovalStore();
    const record = store.open(minted(Date.now() + 600_000), {})!;
    const waited = store.waitForDecision(record, 600_000);
    store.decide(record, 'denied', 'alice');
    await waited;
    expect(record.status).toBe('denied');
  });
});

describe('page', () => {
  test('a hostile argument and skill text are shown as text, never as markup', () => {
    const hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>';
    const m = minted(Date.now() + 60_000, hostile);
    const html = approvalPage({
      id: 'i'.repeat(43),
      willRun: { ...m.willRun, egressNote: '<b>x</b>' },
      hash: 'h',
      csrf: 'c"><x',
      requester: '<alice>',
      viewer: 'bob',
      expiresAt: m.expiresAt,
    });
    return html.text().then((text) => {
      expect(text).not.toContain('<script>');
      expect(text).not.toContain('<img');
      expect(text).not.toContain('<b>x</b>');
      expect(text).toContain(escapeHtml(hostile));
      expect(text).toContain('value="c&quot;&gt;&lt;x"');
      expect(text).toContain(`sha256:${'a'.repeat(64)}`);
      expect(html.headers.get('content-security-policy')).toBe(PAGE_CSP);
      expect(html.headers.get('cache-control')).toBe('no-store');
      expect(html.headers.get('referrer-policy')).toBe('same-origin');
    });
  });

  test('the secrets row names each secret, its hosts and header (escaped), never a value; one not bound says why', async () => {
    const m = minted(Date.now() + 60_000);
    const willRun = {
      ...m.willRun,
      secrets: [{ name: 'API_TOKEN', hosts: ['api.example.com', '*.example.org'], header: 'X-Api-Key', format: '<b>{value}</b>' }],
      secretsNotBound: [{ name: 'OTHER', why: 'not granted: <i>no row</i>' }],
      secretsWarning: 'No owner grant (standalone): <u>x</u>',
    };
    const text = await approvalPage({
      id: 'i'.repeat(43),
      willRun,
      hash: 'h',
      csrf: 'c',
      requester: 'alice',
      viewer: 'alice',
      expiresAt: m.expiresAt,
    }).text();
    expect(text).toContain('<th>secrets</th>');
    expect(text).toContain(
      '<code>API_TOKEN</code>: sent only to <code>api.example.com</code>, <code>*.example.org</code> as <code>X-Api-Key: &lt;b&gt;{value}&lt;/b&gt;</code>',
    );
    expect(text).toContain('<code>OTHER</code>: not given to this run (not granted: &lt;i&gt;no row&lt;/i&gt;)');
    expect(text).toContain('Warning: No owner grant (standalone): &lt;u&gt;x&lt;/u&gt;');
    expect(text).not.toContain('<b>{value}');
  });

  test('the network row lists the request rules of each host, the ones the approval binds', async () => {
    const m = minted(Date.now() + 60_000);
    const willRun = {
      ...m.willRun,
      egress: ['api.example.com:443'],
      egressRules: [
        {
          entry: 'api.example.com:443',
          allow: [
            { methods: ['GET'], path: '/v1/items/*' },
            { methods: ['POST', 'PUT'], path: '/v1/items/**' },
          ],
        },
      ],
    };
    const text = await approvalPage({
      id: 'i'.repeat(43),
      willRun,
      hash: 'h',
      csrf: 'c',
      requester: 'a',
      viewer: 'a',
      expiresAt: m.expiresAt,
    }).text();
    expect(text).toContain(
      'requests to <code>api.example.com:443</code>: only <code>GET /v1/items/*</code>, <code>POST,PUT /v1/items/**</code>',
    );
  });

  test('cookie parsing takes the named cookie only', () => {
    expect(cookieValue('a=1; skill_mcp_approver=x.y; b=2', 'skill_mcp_approver')).toBe('x.y');
    expect(cookieValue('xskill_mcp_approver=1', 'skill_mcp_approver')).toBeUndefined();
    expect(cookieValue(null, 'a')).toBeUndefined();
  });
});

describe('settings', () => {
  const read = (env: Record<string, string>, auth: 'oauth' | 'token' | 'none') => {
    const issues: SettingIssue[] = [];
    return { value: readApprovalSettings(env, auth, issues), issues: issues.map((i) => i.message) };
  };

  test('no URL, no page; a client id without the URL stops the front', () => {
    expect(read({}, 'oauth')).toEqual({ value: undefined, issues: [] });
    expect(read({ SKILL_MCP_APPROVAL_CLIENT_ID: 'x' }, 'oauth').issues[0]).toMatch(/without SKILL_MCP_APPROVAL_URL/);
  });

  test('an http URL off loopback, a path, or no way to sign approvers in stops the front', () => {
    expect(read({ SKILL_MCP_APPROVAL_URL: 'http://mcp.example.com' }, 'token').issues).toHaveLength(1);
    expect(read({ SKILL_MCP_APPROVAL_URL: 'https://mcp.example.com/x' }, 'token').issues[0]).toMatch(/no path/);
    expect(read({ SKILL_MCP_APPROVAL_URL: 'https://mcp.example.com' }, 'none').issues[0]).toMatch(/needs a way to sign approvers in/);
  });

  test('OAuth needs the client id; the static token needs none', () => {
    expect(read({ SKILL_MCP_APPROVAL_URL: 'https://mcp.example.com' }, 'oauth').issues[0]).toMatch(/SKILL_MCP_APPROVAL_CLIENT_ID/);
    expect(
      read(
        { SKILL_MCP_APPROVAL_URL: 'https://mcp.example.com', SKILL_MCP_APPROVAL_CLIENT_ID: 'page', SKILL_MCP_APPROVAL_CLIENT_SECRET: 's' },
        'oauth',
      ).value,
    ).toEqual({ origin: 'https://mcp.example.com', client: { id: 'page', secret: 's' } });
    expect(read({ SKILL_MCP_APPROVAL_URL: 'http://127.0.0.1:3000/' }, 'token').value).toEqual({ origin: 'http://127.0.0.1:3000' });
  });
});

describe('sign-in flood (login.ts limits)', () => {
  /** An OAuthLogin whose issuer answers every code with a token naming `sub`; the clock is ours. */
  function login(limits?: LoginLimits) {
    let now = 1_000_000;
    const options = {
      endpoints: { authorizationEndpoint: 'https://issuer.example/authorize', tokenEndpoint: 'https://issuer.example/token' },
      client: { id: 'page' },
      origin: 'https://mcp.example.com',
      audience: 'https://mcp.example.com/mcp',
      verifier: {
        verifyAccessToken: async (token: string) => ({
          token,
          clientId: 'page',
          scopes: ['skills:read'],
          extra: { identity: { subject: token.slice('token-for-'.length) } },
        }),
      },
      now: () => now,
      fetchImpl: (async (_url: unknown, init?: RequestInit) =>
        Response.json({ access_token: `token-for-${new URLSearchParams(String(init?.body)).get('code')}` })) as typeof fetch,
    };
    return { login: new OAuthLogin(options, limits), advance: (ms: number) => (now += ms) };
  }
  /** Starts a sign-in and answers what its callback needs, or the refusal. */
  function begin(l: OAuthLogin, approval: string, client: string) {
    const started = l.start(approval, true, client);
    if ('refused' in started) return started;
    const state = new URL(started.location).searchParams.get('state')!;
    const binding = /skill_mcp_login=([^;]+)/.exec(started.cookie)![1]!;
    return { state, binding };
  }
  const finish = (l: OAuthLogin, s: { state: string; binding: string }, who: string) =>
    l.finish(new URLSearchParams({ state: s.state, code: who }), s.binding);

  test("1,000 cookie-less GETs of one's own approval link cancel nobody's sign-in: Bob's, started before, still finishes", async () => {
    const { login: l } = login();
    const bob = begin(l, 'approval-of-bob', '198.51.100.2');
    expect(bob).not.toHaveProperty('refused');
    const refused: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const flood = begin(l, 'approval-of-mallory', '203.0.113.7');
      if ('refused' in flood) refused.push(flood.refused);
    }
    // All but the per-approval allowance refused, for that reason; nothing else was dropped.
    expect(refused).toHaveLength(1_000 - LOGIN_LIMITS.perApproval);
    expect(new Set(refused)).toEqual(new Set(['approval']));
    expect(l.pending).toBe(1 + LOGIN_LIMITS.perApproval);
    expect(await finish(l, bob as { state: string; binding: string }, 'bob')).toMatchObject({
      ok: true,
      approvalId: 'approval-of-bob',
      subject: 'bob',
    });
    // And a sign-in Bob starts now, for another link, is let through.
    expect(begin(l, 'approval-of-bob-2', '198.51.100.2')).not.toHaveProperty('refused');
  });

  test('one address flooding many approval links is refused at its own allowance; another address still signs in', async () => {
    const { login: l } = login({ perApproval: 2, perAddress: 5, total: 100 });
    for (let i = 0; i < 20; i++) begin(l, `mallory-${i}`, '203.0.113.7');
    expect(l.pending).toBe(5);
    expect(begin(l, 'mallory-99', '203.0.113.7')).toEqual({ refused: 'address' });
    const alice = begin(l, 'approval-of-alice', '192.0.2.10');
    expect(alice).not.toHaveProperty('refused');
    expect(await finish(l, alice as { state: string; binding: string }, 'alice')).toMatchObject({ ok: true, subject: 'alice' });
  });

  test('addresses of one IPv6 /64 share one allowance (a host is handed the whole /64)', () => {
    const { login: l } = login({ perApproval: 100, perAddress: 3, total: 100 });
    expect(loginAddressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(loginAddressKey('2001:0db8:0001:0002:ffff:0:0:9')).toBe('2001:db8:1:2::/64');
    expect(loginAddressKey('::ffff:0:1.2.3.4')).toBe('0:0:0:0::/64');
    expect(loginAddressKey('192.0.2.1')).toBe('192.0.2.1');
    for (let i = 1; i <= 3; i++) expect(begin(l, `a${i}`, `2001:db8:1:2::${i}`)).not.toHaveProperty('refused');
    expect(begin(l, 'a4', '2001:db8:1:2:abcd::4')).toEqual({ refused: 'address' });
    expect(begin(l, 'a5', '2001:db8:1:3::5')).not.toHaveProperty('refused');
  });

  test('when every place is taken new sign-ins are refused (total), and an expired or finished one frees its place', async () => {
    const { login: l, advance } = login({ perApproval: 10, perAddress: 10, total: 3 });
    const first = begin(l, 'x', '192.0.2.1') as { state: string; binding: string };
    begin(l, 'y', '192.0.2.2');
    advance(300_000);
    begin(l, 'z', '192.0.2.3');
    expect(begin(l, 'w', '192.0.2.4')).toEqual({ refused: 'total' });
    // The first one is still good: nothing was evicted to make room.
    expect(await finish(l, first, 'one')).toMatchObject({ ok: true, approvalId: 'x' });
    expect(begin(l, 'w', '192.0.2.4')).not.toHaveProperty('refused');
    expect(begin(l, 'v', '192.0.2.5')).toEqual({ refused: 'total' });
    // Ten minutes after the second was started it has expired: its place is free.
    advance(300_000);
    expect(begin(l, 'v', '192.0.2.5')).not.toHaveProperty('refused');
  });
});
