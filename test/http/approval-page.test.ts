/**
 * The approval page over real HTTP: a front + runner pair, OAuth at the local issuer, the SDK
 * client asking for runs and a cookie-keeping HTTP client playing the person's browser. A token
 * runs nothing until a person approves its preview on the page; the requester or a holder of
 * skills:approve may decide, nobody else; a link decides once, dies with its token, and is bound
 * to its session's CSRF token and to the preview it showed. URL-mode elicitation (2026-07-28
 * `input_required` with `elicitation/create` mode url) runs the same approval inside one call.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, REPO, startHttp, type HttpServer } from './harness.js';
import { freePort } from './issuer.js';
import { LOGIN_LIMITS } from '../../server/approve/login.js';
import {
  acceptedRuns,
  clientAs,
  decide,
  field,
  PageBrowser,
  runTool,
  signIn,
  startApprovalSetup,
  type ApprovalSetup,
} from './approval-harness.js';

let setup: ApprovalSetup;
beforeAll(async () => {
  // The test's own loopback address stands for a proxy: the sign-in limits count the X-Forwarded-For client.
  setup = await startApprovalSetup('http-approval', '61940-61947', { SKILL_MCP_HTTP_TRUSTED_PROXIES: '127.0.0.1' });
}, 60_000);
afterAll(async () => {
  await setup?.stop();
});

/** Alice asks for a run without any elicitation: a preview, a token and the page's link. */
async function preview(message: string, who = 'alice'): Promise<{ token: string; link: string }> {
  const client = await clientAs(setup, who);
  try {
    const first = await runTool(client, { args: [message] });
    expect(first.value, JSON.stringify(first.value)).toMatchObject({
      status: 'confirmation-required',
      mode: 'approval-page',
      confirmToken: expect.any(String),
      approvalUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/approve\/[A-Za-z0-9_-]{43}$/),
    });
    return { token: first.value['confirmToken'] as string, link: first.value['approvalUrl'] as string };
  } finally {
    await client.close();
  }
}

async function useToken(message: string, token: string, who = 'alice'): Promise<Record<string, unknown>> {
  const client = await clientAs(setup, who);
  try {
    return (await runTool(client, { args: [message], confirmToken: token })).value;
  } finally {
    await client.close();
  }
}

describe('token path with the approval page', () => {
  test('the token runs nothing before approval (APPROVAL_PENDING); the requester approves on the page; it runs once, audited as elicitation-url by her; a replayed approve is refused', async () => {
    const message = 'feat(page): add a run approved in a browser';
    const { token, link } = await preview(message);
    const before = acceptedRuns(setup).length;
    expect(await useToken(message, token)).toMatchObject({ error: { code: 'APPROVAL_PENDING' }, approvalUrl: link });
    expect(acceptedRuns(setup)).toHaveLength(before);

    const browser = new PageBrowser();
    const page = await signIn(browser, link, 'alice');
    expect(page.status, page.text).toBe(200);
    // What will run, from the runner's own preview: skill, script, argument, full digests.
    expect(page.text).toContain(message);
    expect(page.text).toMatch(/sha256:[0-9a-f]{64}/);
    expect(page.text).toContain('scripts/check-message.js');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-store');
    const session = page.headers.getSetCookie().find((c) => c.startsWith('skill_mcp_approver='))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Strict/);

    const approved = await decide(browser, link, page, 'approve');
    expect(approved.status, approved.text).toBe(200);
    expect(approved.text).toContain('Approved');
    const replay = await decide(browser, link, page, 'approve');
    expect(replay.status).toBe(409);

    const ran = await useToken(message, token);
    expect(ran, JSON.stringify(ran)).toMatchObject({ status: 'completed', exitCode: 0 });
    const accepted = acceptedRuns(setup).find((l) => l['run_id'] === ran['runId']);
    expect(accepted).toMatchObject({ approval: { channel: 'elicitation-url', approver: 'alice' } });
    // Once: the same token again is refused, and nothing more runs.
    expect(await useToken(message, token)).toMatchObject({ error: { code: 'TOKEN_REUSED' } });
    expect(acceptedRuns(setup)).toHaveLength(before + 1);
    // The access log and warnings never carry the link's id.
    expect(setup.server.stderr()).not.toContain(link.split('/').pop()!);
  });

  test('deny: the token is refused APPROVAL_DENIED and nothing runs', async () => {
    const message = 'feat(page): add a denied run';
    const { token, link } = await preview(message);
    const before = acceptedRuns(setup).length;
    const browser = new PageBrowser();
    const denied = await decide(browser, link, await signIn(browser, link, 'alice'), 'deny');
    expect(denied.text).toContain('Denied');
    expect(await useToken(message, token)).toMatchObject({
      error: { code: 'APPROVAL_DENIED', message: expect.stringContaining('alice denied') },
    });
    expect(acceptedRuns(setup)).toHaveLength(before);
  });

  test("another identity (Bob, no skills:approve) cannot see or decide Alice's run, even replaying her form: refused with a clear page and logged", async () => {
    const message = 'feat(page): keep bob out';
    const { token, link } = await preview(message);
    const alice = new PageBrowser();
    const alicePage = await signIn(alice, link, 'alice');
    const bob = new PageBrowser();
    const bobPage = await signIn(bob, link, 'bob');
    expect(bobPage.status).toBe(403);
    expect(bobPage.text).toContain('Not yours to approve');
    expect(bobPage.text).not.toContain(message);
    expect(setup.server.stderr()).toMatch(/approval: refused bob viewing approval [0-9a-f]{12}/);
    // Alice's form, posted with Bob's session: her CSRF token is bound to her sign-in.
    const forged = await decide(bob, link, alicePage, 'approve');
    expect(forged.status).toBe(403);
    expect(await useToken(message, token)).toMatchObject({ error: { code: 'APPROVAL_PENDING' } });
    // And Bob cannot spend Alice's token himself.
    expect(await useToken(message, token, 'bob')).toMatchObject({ error: { code: 'APPROVAL_REQUIRED' } });
  });

  test("an identity holding skills:approve (Carol) may approve Alice's run; the audit names Carol as the approver and Alice as the requester", async () => {
    const message = 'feat(page): let carol approve';
    const { token, link } = await preview(message);
    const carol = new PageBrowser();
    const page = await signIn(carol, link, 'carol');
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain('Requested by <code>alice</code>');
    expect((await decide(carol, link, page, 'approve')).status).toBe(200);
    const ran = await useToken(message, token);
    expect(ran).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(acceptedRuns(setup).find((l) => l['run_id'] === ran['runId'])).toMatchObject({
      approval: { channel: 'elicitation-url', approver: 'carol' },
      requester: 'alice',
    });
  });

  test('CSRF: a form without the token, or with a wrong one, decides nothing (and is logged)', async () => {
    const message = 'feat(page): check csrf';
    const { token, link } = await preview(message);
    const browser = new PageBrowser();
    const page = await signIn(browser, link, 'alice');
    const h = field(page.text, 'h')!;
    const missing = await browser.post(link, { h, decision: 'approve' });
    expect(missing.status).toBe(403);
    expect(missing.text).toContain('CSRF');
    const wrong = await browser.post(link, { csrf: 'A'.repeat(43), h, decision: 'approve' });
    expect(wrong.status).toBe(403);
    expect(setup.server.stderr()).toMatch(
      /approval: refused a form for approval [0-9a-f]{12} from alice with a missing or wrong CSRF token/,
    );
    // A form from another site, with a valid token and cookie, is refused on its Origin.
    const crossSite = await browser.post(link, { csrf: field(page.text, 'csrf')!, h, decision: 'approve' }, 'https://evil.example');
    expect(crossSite.status).toBe(403);
    // A form naming another preview is refused.
    const otherPreview = await browser.post(link, { csrf: field(page.text, 'csrf')!, h: '0'.repeat(64), decision: 'approve' });
    expect(otherPreview.status).toBe(409);
    expect(await useToken(message, token)).toMatchObject({ error: { code: 'APPROVAL_PENDING' } });
  });

  test('a tampered or made-up link opens nothing: 404 with a page saying so, GET or POST', async () => {
    const { link } = await preview('feat(page): refuse tampered links');
    const last = link.at(-1) === 'A' ? 'B' : 'A';
    const tampered = `${link.slice(0, -1)}${last}`;
    const browser = new PageBrowser();
    for (const url of [tampered, `${link}x`, link.replace(/\/[^/]+$/, '/..%2f..%2fetc'), link.replace(/\/[^/]+$/, '/short')]) {
      const answer = await browser.get(url);
      expect(answer.status, url).toBe(404);
      const posted = await browser.post(url, { decision: 'approve' });
      expect(posted.status).toBe(404);
    }
    expect((await browser.get(tampered)).text).toContain('Unknown approval link');
  });

  test('a cookie sealed by anyone but this front is no session: the page asks to sign in again', async () => {
    const { link } = await preview('feat(page): refuse forged cookies');
    const browser = new PageBrowser();
    const page = await signIn(browser, link, 'alice');
    const real = browser.cookie(setup.origin, 'skill_mcp_approver')!;
    const [body] = real.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, sub: 'carol', scopes: ['skills:approve'] })).toString('base64url');
    browser.setCookie(setup.origin, 'skill_mcp_approver', `${forgedBody}.${real.split('.')[1]}`);
    const answer = await decide(browser, link, page, 'approve');
    expect(answer.status).toBe(401);
  });
});

/** A cookie-less GET of an approval link, as `client` behind the trusted proxy: its status (302 to the issuer, or 429). */
async function bareGet(link: string, client: string): Promise<number> {
  const answer = await fetch(link, { redirect: 'manual', headers: { 'x-forwarded-for': client } });
  await answer.body?.cancel();
  return answer.status;
}

describe('sign-in flood (login.ts limits)', () => {
  test("1,000 cookie-less GETs of one's own approval link cancel nobody's sign-in: Bob's, under way, completes; the flood is refused 429 past its allowance and logged once", async () => {
    const mallory = await preview('feat(page): flood my own link');
    const bobs = await preview('feat(page): bob signs in during a flood', 'bob');
    const bob = new PageBrowser();
    // Bob's sign-in is under way: he is at the issuer's form, his transaction pending at the front.
    const form = await bob.get(bobs.link);
    expect(form.status, form.text).toBe(200);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 1_000; i++) {
      const status = await bareGet(mallory.link, '203.0.113.7');
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 302: LOGIN_LIMITS.perApproval, 429: 1_000 - LOGIN_LIMITS.perApproval });
    // Another address on the same link is refused too: the allowance is the link's.
    expect(await bareGet(mallory.link, '203.0.113.8')).toBe(429);
    const refusal = await fetch(mallory.link, { headers: { 'x-forwarded-for': '203.0.113.8' } });
    expect(refusal.headers.get('retry-after')).toBe('60');
    expect(await refusal.text()).toContain('Too many sign-ins were started for this approval link');
    expect(setup.server.stderr().match(/approval: refusing new sign-ins: too many under way for approval [0-9a-f]{12}/g)).toHaveLength(1);
    // Bob finishes his sign-in: the page, then his approval, then his run.
    const page = await bob.post(new URL('/authorize', form.url).href, { tx: field(form.text, 'tx')!, username: 'bob' });
    expect(page.status, page.text).toBe(200);
    expect((await decide(bob, bobs.link, page, 'approve')).status).toBe(200);
    expect(await useToken('feat(page): bob signs in during a flood', bobs.token, 'bob')).toMatchObject({ status: 'completed' });
  });

  test("one client flooding several links is refused at its address allowance, counted by the trusted proxy's X-Forwarded-For; another client still signs in", async () => {
    const links: string[] = [];
    const needed = Math.ceil(LOGIN_LIMITS.perAddress / LOGIN_LIMITS.perApproval) + 1;
    for (let i = 0; i < needed; i++) links.push((await preview(`feat(page): address flood ${i}`)).link);
    let started = 0;
    for (const link of links.slice(0, -1))
      for (let i = 0; i < LOGIN_LIMITS.perApproval; i++) if ((await bareGet(link, '203.0.113.9')) === 302) started++;
    expect(started).toBe(LOGIN_LIMITS.perAddress);
    const fresh = links.at(-1)!;
    expect(await bareGet(fresh, '203.0.113.9')).toBe(429);
    expect(setup.server.stderr()).toContain('approval: refusing new sign-ins: too many under way for one client address');
    // The same link from another client (another X-Forwarded-For through the same proxy) is let through.
    expect(await bareGet(fresh, '203.0.113.10')).toBe(302);
  });
});

describe('URL-mode elicitation (2026-07-28: input_required with elicitation/create mode url)', () => {
  /** A client declaring url elicitation whose "person" opens the link and decides on the page. */
  async function urlClient(decision: 'approve' | 'deny' | 'decline', seen: { url?: string; mode?: string }[]) {
    const client = await clientAs(setup, 'alice', { elicitation: { url: {} } });
    let pageStep: Promise<unknown> | undefined;
    client.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params as { mode?: string; url?: string };
      seen.push({ mode: params.mode, url: params.url });
      if (decision === 'decline') return { action: 'decline' };
      // As a real client does: it answers accept once the person agreed to open the link; the
      // person decides on the page meanwhile (here, right after).
      // Asked again (the person took longer than the front holds a retry): wait for the page step, so a failure ends the call.
      if (pageStep !== undefined) await pageStep;
      else {
        const browser = new PageBrowser();
        pageStep = signIn(browser, params.url!, 'alice').then((page) => decide(browser, params.url!, page, decision));
      }
      return { action: 'accept' };
    });
    return client;
  }

  test('approve on the page: the same tool call completes with the run, audited as elicitation-url by alice', async () => {
    const seen: { url?: string; mode?: string }[] = [];
    const client = await urlClient('approve', seen);
    try {
      const ran = await runTool(client, { args: ['feat(url): run after approval in the browser'] });
      expect(ran.value, JSON.stringify(ran.value)).toMatchObject({ status: 'completed', exitCode: 0 });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ mode: 'url', url: expect.stringMatching(/\/approve\/[A-Za-z0-9_-]{43}$/) });
      expect(acceptedRuns(setup).find((l) => l['run_id'] === ran.value['runId'])).toMatchObject({
        approval: { channel: 'elicitation-url', approver: 'alice' },
      });
    } finally {
      await client.close();
    }
  });

  test('deny on the page: the call is refused APPROVAL_DENIED and nothing runs', async () => {
    const before = acceptedRuns(setup).length;
    const seen: { url?: string; mode?: string }[] = [];
    const client = await urlClient('deny', seen);
    try {
      const answer = await runTool(client, { args: ['feat(url): stop on denial'] });
      expect(answer.value).toMatchObject({ error: { code: 'APPROVAL_DENIED' } });
      expect(acceptedRuns(setup)).toHaveLength(before);
    } finally {
      await client.close();
    }
  });

  test('the person declines to open the link: cancelled, and the link decides nothing any more', async () => {
    const seen: { url?: string; mode?: string }[] = [];
    const client = await urlClient('decline', seen);
    try {
      expect((await runTool(client, { args: ['feat(url): stop on decline'] })).value).toMatchObject({ status: 'cancelled' });
      expect((await new PageBrowser().get(seen[0]!.url!)).status).toBe(409);
    } finally {
      await client.close();
    }
  });
});

describe('an expired link', () => {
  let short: ApprovalSetup;
  beforeAll(async () => {
    // Tokens (and so links) live two seconds here: the runner mints them, the front follows.
    short = await startApprovalSetup('http-approval-ttl', '61948-61955', { MCP_CONFIRM_TTL_SECONDS: '2' });
  }, 60_000);
  afterAll(async () => {
    await short?.stop();
  });

  test('after its token expired the page says so (410) and approving is refused; the token runs nothing', async () => {
    const client = await clientAs(short, 'alice');
    try {
      const first = await runTool(client, { args: ['feat(page): expire links'] });
      const link = first.value['approvalUrl'] as string;
      const expiresAt = Date.parse(first.value['expiresAt'] as string);
      const browser = new PageBrowser();
      const page = await signIn(browser, link, 'alice');
      // Waits for the clock, not for work: the link's lifetime is what is under test.
      while (Date.now() <= expiresAt + 50) await new Promise((r) => setTimeout(r, 100));
      expect((await browser.get(link)).status).toBe(410);
      // The page signed in before the expiry (the usual case): its own form is refused now. On a
      // machine so loaded that the sign-in itself outlived the link, the page already said 410.
      if (page.status === 200) {
        const late = await decide(browser, link, page, 'approve');
        expect(late.status).toBe(410);
        expect(late.text).toContain('expired');
      } else expect(page.status).toBe(410);
      const ran = await runTool(client, { args: ['feat(page): expire links'], confirmToken: first.value['confirmToken'] });
      expect(ran.value).toMatchObject({ error: { code: 'TOKEN_EXPIRED' } });
      expect(acceptedRuns(short)).toHaveLength(0);
    } finally {
      await client.close();
    }
  });
});

describe('with the static bearer token instead of OAuth', () => {
  const TOKEN = 'static-approval-token-0123456789abcdef';
  let front: HttpServer;
  let origin: string;
  beforeAll(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    front = await startHttp(
      {
        SKILLS_DIR: `${REPO}skills`,
        SKILL_MCP_RUNNER_SOCKET: setup.runner.socketPath,
        SKILL_MCP_HTTP_TOKEN: TOKEN,
        SKILL_MCP_APPROVAL_URL: origin,
      },
      [],
      { port },
    );
  }, 30_000);
  afterAll(async () => {
    await front?.stop();
    expect(front.stderr()).not.toContain(TOKEN);
  });

  test('the page asks for the token in a POST form (never the address); a wrong one is refused; the right one shows the run, and approving runs it as static-token', async () => {
    const client = await connectClient(front.url, 'modern', TOKEN);
    try {
      const message = 'feat(page): approve with the bearer token';
      const first = await runTool(client, { args: [message] });
      const link = first.value['approvalUrl'] as string;
      expect(link.startsWith(`${origin}/approve/`)).toBe(true);
      const browser = new PageBrowser();
      const form = await browser.get(link);
      expect(form.status).toBe(200);
      expect(form.text).toContain('type="password" name="bearer"');
      expect(form.text).toContain('method="post"');
      expect(form.text).not.toContain(message);
      const wrong = await browser.post(link, { login: 'bearer', bearer: 'not-the-token-0123456789' });
      expect(wrong.status).toBe(401);
      expect(wrong.text).not.toContain(message);
      expect(front.stderr()).toMatch(/approval: a wrong bearer token was typed into the page/);
      const page = await browser.post(link, { login: 'bearer', bearer: TOKEN });
      expect(page.status, page.text).toBe(200);
      expect(page.text).toContain(message);
      expect((await decide(browser, link, page, 'approve')).status).toBe(200);
      const ran = await runTool(client, { args: [message], confirmToken: first.value['confirmToken'] });
      expect(ran.value, JSON.stringify(ran.value)).toMatchObject({ status: 'completed', exitCode: 0 });
      expect(acceptedRuns(setup).find((l) => l['run_id'] === ran.value['runId'])).toMatchObject({
        approval: { channel: 'elicitation-url', approver: 'static-token' },
      });
    } finally {
      await client.close();
    }
  });
});
