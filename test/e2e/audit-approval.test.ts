/**
 * Who approved and how, as the runner's audit log records it for runs a real MCP client makes over
 * stdio: a form elicitation answered in the client (`elicitation-form`), a token the model passed
 * back after asking the person in the chat (`token`), a token under the owner's
 * `MCP_CONFIRM_MODE=auto` with no person asked (`auto`); each with the OS user standalone as the
 * requester and the grant that allowed it.
 */
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { afterAll, describe, expect, test } from 'vitest';
import { callTool, ERAS, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, audit, writeRunSkills } from './run-skills.js';

const root = writeRunSkills();
const closing: Served[] = [];
afterAll(async () => {
  for (const s of closing) await s.close();
  await expectNoLeftovers();
});

async function acceptOf(env: Record<string, string>, withToken: boolean): Promise<Record<string, unknown>> {
  const stateDir = join(tempDir('state'), 'state');
  const served = await serve(
    { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, ...env },
    ERAS[0]!,
    withToken ? {} : { onElicit: () => ({ action: 'accept', content: {} }) },
  );
  closing.push(served);
  const args = { name: 'reporter', script: 'scripts/report.js', args: ['ok'] };
  const result = withToken
    ? await callTool(served.client, 'skill_run', { ...args, confirmToken: (await askToken(served.client, args)).confirmToken })
    : await callTool(served.client, 'skill_run', args);
  expect(result.value['status'], result.text).toBe('completed');
  const accept = audit(stateDir).find((l) => l.event === 'run.accept' && l.run_id === result.value['runId']);
  expect(accept).toBeDefined();
  return accept as unknown as Record<string, unknown>;
}

describe('the approval channel and the requester on the run.accept line', () => {
  // The runner's own user (the same fallback as the runner when the uid has no passwd entry).
  const user = ((): string => {
    try {
      return userInfo().username;
    } catch {
      return `uid:${process.getuid?.() ?? '?'}`;
    }
  })();
  const who = { requester: user, requester_from: 'os-user', grant: { from: 'declaration' } };

  test('a form elicitation the person accepted: elicitation-form', async () => {
    expect(await acceptOf({}, false)).toMatchObject({ ...who, approval: { channel: 'elicitation-form' } });
  });

  test('a token passed back (ask-user: the model was told to ask the person): token', async () => {
    expect(await acceptOf({ MCP_CONFIRM_ELICITATION: 'off' }, true)).toMatchObject({ ...who, approval: { channel: 'token' } });
  });

  test('a token under MCP_CONFIRM_MODE=auto (nobody was asked): auto, never mistaken for a person', async () => {
    expect(await acceptOf({ MCP_CONFIRM_ELICITATION: 'off', MCP_CONFIRM_MODE: 'auto' }, true)).toMatchObject({
      ...who,
      approval: { channel: 'auto' },
    });
  });
});
