/**
 * @module What the approval-page suites share: a front + runner pair with OAuth at the local
 * issuer and the page on, the SDK client signed in as one of the issuer's clients, and a small
 * cookie-keeping HTTP "browser" (fetch with manual redirects) that signs in at the issuer's login
 * form and posts the page's forms as a browser would (Origin, cookies per origin).
 */
import { rmSync } from 'node:fs';
import { expect } from 'vitest';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { auditLines, startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { REPO, startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

export const SKILL = 'commit-message';
export const SCRIPT = 'scripts/check-message.js';
export const APPROVAL_CLIENT = { id: 'approval-page', secret: 'approval-page-secret-0123456789' };
const RUN = ['skills:read', 'skills:run'];

export interface ApprovalSetup {
  issuer: TestIssuer;
  runner: RunnerHandle;
  server: HttpServer;
  /** The page's origin (the front's own loopback origin here). */
  origin: string;
  stop(): Promise<void>;
}

/**
 * Alice, Bob (MCP clients and people who can sign in, both with read+run) and Carol (who also
 * holds skills:approve) at a fresh issuer; a runner; a front with the approval page.
 */
export async function startApprovalSetup(name: string, uidRange: string, env: Record<string, string> = {}): Promise<ApprovalSetup> {
  const base = tempDir(name);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const issuer = await startIssuer(
    {
      alice: { secret: 'alice-secret-0123456789', scopes: RUN },
      bob: { secret: 'bob-secret-0123456789', scopes: RUN },
      carol: { secret: 'carol-secret-0123456789', scopes: RUN },
      [APPROVAL_CLIENT.id]: { secret: APPROVAL_CLIENT.secret, scopes: [], redirectUris: [`${origin}/approve/callback`] },
    },
    { users: { alice: { scopes: RUN }, bob: { scopes: RUN }, carol: { scopes: [...RUN, 'skills:approve'] } } },
  );
  const runner = await startRunner({
    env: { SKILL_MCP_UID_RANGE: uidRange, ...env },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  const server = await startHttp(
    {
      SKILLS_DIR: `${REPO}skills`,
      SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
      SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
      SKILL_MCP_OAUTH_AUDIENCE: `${origin}/mcp`,
      SKILL_MCP_APPROVAL_URL: origin,
      SKILL_MCP_APPROVAL_CLIENT_ID: APPROVAL_CLIENT.id,
      SKILL_MCP_APPROVAL_CLIENT_SECRET: APPROVAL_CLIENT.secret,
      ...env,
    },
    [],
    { port },
  );
  return {
    issuer,
    runner,
    server,
    origin,
    async stop() {
      await server.stop();
      await runner.stop();
      await issuer.close();
      // Security: no token the issuer handed out, and no approval id, is in either process's log.
      for (const token of issuer.issued()) expect(server.stderr() + runner.stderr()).not.toContain(token);
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** The SDK client as one of the issuer's MCP clients, pinned to 2026-07-28, declaring `capabilities`. */
export async function clientAs(setup: ApprovalSetup, id: string, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const provider = new ClientCredentialsProvider({
    clientId: id,
    clientSecret: `${id}-secret-0123456789`,
    expectedIssuer: setup.issuer.issuer,
  });
  const client = new Client(
    { name: 'approval-test', version: '0.0.0' },
    { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(setup.server.url), { authProvider: provider }));
  return client;
}

export interface ToolAnswer {
  isError: boolean;
  value: Record<string, unknown>;
}

export async function runTool(client: Client, args: Record<string, unknown>): Promise<ToolAnswer> {
  const result = await client.callTool({ name: 'skill_run', arguments: { name: SKILL, script: SCRIPT, ...args } });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown> };
}

/** The audit lines of runs that were accepted (the runner started them). */
export function acceptedRuns(setup: ApprovalSetup): Record<string, unknown>[] {
  return auditLines(setup.runner.stateDir).filter((l) => l['event'] === 'run.accept');
}

export interface PageAnswer {
  status: number;
  url: string;
  headers: Headers;
  text: string;
}

/** A cookie-keeping client for the page, one jar per origin, following redirects as a browser does. */
export class PageBrowser {
  readonly #jars = new Map<string, Map<string, string>>();

  #jar(url: URL): Map<string, string> {
    const jar = this.#jars.get(url.origin) ?? new Map<string, string>();
    this.#jars.set(url.origin, jar);
    return jar;
  }

  cookie(origin: string, name: string): string | undefined {
    return this.#jars.get(origin)?.get(name);
  }

  setCookie(origin: string, name: string, value: string): void {
    this.#jar(new URL(origin)).set(name, value);
  }

  async get(url: string): Promise<PageAnswer> {
    return this.#request(new URL(url), 'GET');
  }

  /** A form post, with the Origin header a browser sends (`origin`: that of the page the form is on). */
  async post(url: string, form: Record<string, string>, origin: string = new URL(url).origin): Promise<PageAnswer> {
    return this.#request(new URL(url), 'POST', new URLSearchParams(form).toString(), origin);
  }

  async #request(url: URL, method: string, body?: string, origin?: string): Promise<PageAnswer> {
    for (let hop = 0; hop < 6; hop++) {
      const jar = this.#jar(url);
      const headers: Record<string, string> = {};
      if (jar.size > 0) headers['cookie'] = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
      if (origin !== undefined) headers['origin'] = origin;
      const response = await fetch(url, { method, headers, redirect: 'manual', ...(body !== undefined ? { body } : {}) });
      for (const line of response.headers.getSetCookie()) {
        const [pair = '', ...attributes] = line.split(';').map((p) => p.trim());
        const [name = '', ...value] = pair.split('=');
        if (attributes.some((a) => /^max-age=0$/i.test(a))) jar.delete(name);
        else jar.set(name, value.join('='));
      }
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        url = new URL(location, url);
        method = 'GET';
        body = undefined;
        origin = undefined;
        continue;
      }
      return { status: response.status, url: url.href, headers: response.headers, text: await response.text() };
    }
    throw new Error('too many redirects');
  }
}

/** A hidden field's value on a page. */
export function field(html: string, name: string): string | undefined {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];
}

/** Opens an approval link and signs in at the issuer's form as `user`; answers the page shown after. */
export async function signIn(browser: PageBrowser, link: string, user: string): Promise<PageAnswer> {
  const form = await browser.get(link);
  expect(form.status, form.text).toBe(200);
  const tx = field(form.text, 'tx');
  expect(tx, `the issuer's login form: ${form.text}`).toBeDefined();
  return browser.post(new URL('/authorize', form.url).href, { tx: tx!, username: user });
}

/** Posts the page's own Approve or Deny form (CSRF token and preview hash taken from the page). */
export async function decide(browser: PageBrowser, link: string, page: PageAnswer, decision: 'approve' | 'deny'): Promise<PageAnswer> {
  const csrf = field(page.text, 'csrf');
  const h = field(page.text, 'h');
  expect(csrf && h, page.text).toBeTruthy();
  return browser.post(link, { csrf: csrf!, h: h!, decision });
}
