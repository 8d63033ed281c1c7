/**
 * The approval page in a real headless browser (Chromium from Debian, driven by puppeteer-core):
 * the SDK client asks for a run, the browser opens the link, signs in at the local issuer's login
 * form, reads the preview and clicks Approve or Deny — under the page's own CSP, cookies and
 * redirects as a browser applies them — and the client's `skill_run` result shows whether the run
 * happened. Skipped, saying why, when Chromium is not installed and CI is not set; with CI set a
 * missing Chromium fails (.ci/run installs it).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser } from 'puppeteer-core';
import { acceptedRuns, clientAs, runTool, startApprovalSetup, type ApprovalSetup } from './approval-harness.js';

/** Debian's Chromium; SKILL_MCP_TEST_CHROMIUM names another binary (or a missing one, to check the skip). */
const CHROMIUM = process.env['SKILL_MCP_TEST_CHROMIUM'] || '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
const inCi = process.env['CI'] !== undefined && process.env['CI'] !== '';
const title =
  present || inCi
    ? 'the approval page in headless Chromium'
    : `the approval page in headless Chromium (skipped: ${CHROMIUM} is not installed and CI is not set; apt-get install -y chromium)`;

describe.skipIf(!present && !inCi)(title, () => {
  let setup: ApprovalSetup;
  let browser: Browser;
  let profile: string;

  beforeAll(async () => {
    if (!present) throw new Error(`CI is set but ${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
    const { launch } = await import('puppeteer-core');
    profile = mkdtempSync(join(tmpdir(), 'skill-mcp-chromium-'));
    setup = await startApprovalSetup('http-approval-browser', '61956-61963');
    // As root Chromium refuses its own sandbox; the page under test is ours, on loopback.
    browser = await launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir: profile,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run'],
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await setup?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  /**
   * What the person does: open the link, sign in as `user` at the issuer, check the preview shows
   * `argument`, click `button`. Answers the text of the page the click led to. A fresh browser
   * context each time (no cookies carried over).
   */
  async function personDecides(link: string, user: string, argument: string, button: 'approve' | 'deny'): Promise<string> {
    const context = await browser.createBrowserContext();
    try {
      const page = await context.newPage();
      await page.goto(link);
      // Redirected to the issuer's login form.
      await page.waitForSelector('#username');
      await page.type('#username', user);
      await Promise.all([page.waitForNavigation(), page.click('#login')]);
      const preview = await page.$eval('#preview', (el) => (el as unknown as { textContent: string }).textContent);
      expect(preview).toContain(argument);
      expect(preview).toContain('scripts/check-message.js');
      expect(preview).toMatch(/sha256:[0-9a-f]{64}/);
      await Promise.all([page.waitForNavigation(), page.click(`#${button}`)]);
      return await page.$eval('body', (el) => (el as unknown as { textContent: string }).textContent);
    } finally {
      await context.close();
    }
  }

  /** A client declaring URL elicitation: it says yes to opening the link, and the person decides in the browser meanwhile. */
  async function urlClient(button: 'approve' | 'deny', argument: string, outcome: Promise<string>[]) {
    const client = await clientAs(setup, 'alice', { elicitation: { url: {} } });
    client.setRequestHandler('elicitation/create', async (request) => {
      const { mode, url } = request.params as { mode?: string; url?: string };
      expect(mode).toBe('url');
      // Asked again (the person took longer than the front holds a retry): the browser step is
      // under way or failed — wait for it, so a failure ends the call instead of asking forever.
      if (outcome.length > 0) await outcome[0];
      else outcome.push(personDecides(url!, 'alice', argument, button));
      return { action: 'accept' };
    });
    return client;
  }

  test("URL-mode elicitation: sign in at the issuer, click Approve — the client's skill_run result is the run", async () => {
    const argument = 'feat(browser): approve in chromium';
    const outcome: Promise<string>[] = [];
    const client = await urlClient('approve', argument, outcome);
    try {
      const ran = await runTool(client, { args: [argument] });
      expect(outcome).toHaveLength(1);
      expect(await outcome[0]).toContain('Approved');
      expect(ran.value, JSON.stringify(ran.value)).toMatchObject({ status: 'completed', exitCode: 0, timedOut: false });
      expect(acceptedRuns(setup).find((l) => l['run_id'] === ran.value['runId'])).toMatchObject({
        approval: { channel: 'elicitation-url', approver: 'alice' },
        requester: 'alice',
      });
    } finally {
      await client.close();
    }
  }, 120_000);

  test("URL-mode elicitation: click Deny — the client's skill_run is refused APPROVAL_DENIED and nothing ran", async () => {
    const argument = 'feat(browser): deny in chromium';
    const before = acceptedRuns(setup).length;
    const outcome: Promise<string>[] = [];
    const client = await urlClient('deny', argument, outcome);
    try {
      const answer = await runTool(client, { args: [argument] });
      expect(await outcome[0]).toContain('Denied');
      expect(answer.value).toMatchObject({ error: { code: 'APPROVAL_DENIED' } });
      expect(acceptedRuns(setup)).toHaveLength(before);
    } finally {
      await client.close();
    }
  }, 120_000);

  test('token path: a client without elicitation gets the link; Approve in the browser makes its token run', async () => {
    const argument = 'feat(browser): unlock the token';
    const client = await clientAs(setup, 'alice');
    try {
      const first = await runTool(client, { args: [argument] });
      expect(first.value).toMatchObject({ status: 'confirmation-required', approvalUrl: expect.any(String) });
      expect(await personDecides(first.value['approvalUrl'] as string, 'alice', argument, 'approve')).toContain('Approved');
      const ran = await runTool(client, { args: [argument], confirmToken: first.value['confirmToken'] });
      expect(ran.value, JSON.stringify(ran.value)).toMatchObject({ status: 'completed', exitCode: 0 });
    } finally {
      await client.close();
    }
  }, 120_000);
});
