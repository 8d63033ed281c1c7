/**
 * Secrets a script uses but never holds (issue 30), as a client sees them: through the SDK's real
 * Client over stdio and the built bin with its own runner. The preview and skill_list show each
 * secret's name and hosts, never a value; the script's environment, its `/proc/self/environ` and
 * every other process it can see in its namespace hold a fresh placeholder, never the value (at
 * both bubblewrap levels: a runner as an ordinary uid, and a root runner); a secret without a value
 * is SECRET_MISSING before anyone is asked to approve, and again at the run, and nothing runs; a
 * change of a declared secret's hosts between the preview and the run is DRAFT_CHANGED; and at a
 * level without the run's own proxy a script with secrets is unavailable, with the reason, instead
 * of being handed the value. That the value reaches the HTTPS API is the injecting proxy's test.
 * Network: none (no test connects anywhere).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bwrapWorks, isRoot, namespaceVariants } from '../levels.js';
import { ERAS, SUITE_TMP, callTool, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, audit, refusal, runsStarted } from './run-skills.js';

const VALUE = 'sk-e2e-secret-value-0123456789abcdef';
const PLACEHOLDER = /^skill-mcp-placeholder-[0-9a-f]{32}$/;
const SHOWN = { name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}' };

/** Prints the variable, its own environ, and every environ and command line it can read in its namespace. */
const SHOW_PY = `import json, os
def read(path):
    try:
        with open(path, "rb") as f: return f.read().decode("latin1")
    except Exception: return ""
others = {}
for pid in os.listdir("/proc"):
    if pid.isdigit(): others[pid] = read("/proc/%s/environ" % pid) + "\\n" + read("/proc/%s/cmdline" % pid)
print(json.dumps({"var": os.environ.get("API_TOKEN"), "environ": read("/proc/self/environ").split("\\0"), "others": others}))
`;
const SHOW_JS = `const fs = require('node:fs');
console.log(JSON.stringify({ var: process.env.API_TOKEN, environ: fs.readFileSync('/proc/self/environ', 'latin1').split('\\0') }));
`;

const DECLARE = (hosts: string[]): string => `version: 1
run:
  - script: show.py
    interpreter: python3
    timeout: 30
  - script: show.js
    interpreter: node
    timeout: 30
egress: [api.example.com, other.example.com]
secrets:
  - name: API_TOKEN
    hosts: [${hosts.join(', ')}]
`;

function put(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, path), text, { mode: 0o644 });
  }
}

function writeSkill(root: string, name: string, declaration: string | undefined): void {
  put(root, {
    [`${name}/SKILL.md`]: `---\nname: ${name}\ndescription: Uses an API key it never holds.\n---\nCall the API.\n`,
    ...(declaration !== undefined ? { [`${name}/mcp-host.yaml`]: declaration } : {}),
    [`${name}/show.py`]: SHOW_PY,
    [`${name}/show.js`]: SHOW_JS,
  });
}

let root: string;
beforeAll(() => {
  root = tempDir('secrets-skills');
  writeSkill(root, 'keyed', DECLARE(['api.example.com']));
});
afterAll(async () => {
  await expectNoLeftovers();
});

type WillRunView = Record<string, unknown> & { envNames: string[]; isolation: string; secrets?: unknown; secretsWarning?: string };

async function runApproved(client: Served['client'], name: string, script: string) {
  const preview = await askToken(client, { name, script });
  const ran = await callTool(client, 'skill_run', { name, script, args: [], confirmToken: preview.confirmToken });
  expect(ran.value['status'], ran.text).toBe('completed');
  expect(ran.value['exitCode'], String(ran.value['stderr'])).toBe(0);
  return {
    preview,
    willRun: preview.preview.willRun as unknown as WillRunView,
    ran,
    out: JSON.parse(String(ran.value['stdout'])) as { var?: string; environ: string[]; others?: Record<string, string> },
  };
}

describe.each(namespaceVariants(40214))('the script holds a placeholder, never the value: $name', (variant) => {
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    if (!variant.run) return;
    const own = tempDir('secrets-front');
    stateDir = join(own, 'state');
    let valueEnv: Record<string, string>;
    if (variant.uid !== undefined) {
      // The ordinary-uid runner reads its value from its own environment.
      execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, own]);
      valueEnv = { SKILL_MCP_SECRET_API_TOKEN: VALUE };
    } else {
      // The test's own uid (root for namespace-uid): a 0600 file of the runner's user.
      const dir = join(own, 'secrets');
      mkdirSync(dir, { mode: 0o700 });
      writeFileSync(join(dir, 'API_TOKEN'), `${VALUE}\n`, { mode: 0o600 });
      valueEnv = { SKILL_MCP_SECRETS_DIR: dir };
    }
    served = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, HOME: own, TMPDIR: own, MCP_CONFIRM_ELICITATION: 'off', ...valueEnv },
      ERAS[0]!,
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {},
    );
  });
  afterAll(async () => {
    await served?.close();
  });

  test.skipIf(!variant.run)(
    'python: the variable, /proc/self/environ and every process in the namespace hold the placeholder; the preview names the secret and its hosts',
    async () => {
      const { preview, willRun, ran, out } = await runApproved(served.client, 'keyed', 'show.py');
      expect(willRun.isolation).toBe(variant.level);
      expect(willRun.secrets).toEqual([SHOWN]);
      expect(willRun.envNames).toContain('API_TOKEN');
      expect(willRun.secretsWarning).toContain('No owner grant (standalone)');
      // Neither the value nor a placeholder is in what the person approves.
      expect(JSON.stringify(preview)).not.toContain(VALUE);
      expect(JSON.stringify(preview)).not.toMatch(/skill-mcp-placeholder-/);
      expect(out.var).toMatch(PLACEHOLDER);
      expect(out.environ).toContain(`API_TOKEN=${out.var}`);
      expect(Object.keys(out.others ?? {}).length).toBeGreaterThan(1);
      expect(JSON.stringify(out)).not.toContain(VALUE);
      expect(ran.text).not.toContain(VALUE);
      const lines = audit(stateDir);
      expect(lines.find((l) => l.event === 'run.accept' && l['run_id'] === ran.value['runId'])).toMatchObject({
        secrets: [{ name: 'API_TOKEN', hosts: ['api.example.com'] }],
        env_names: expect.arrayContaining(['API_TOKEN']),
      });
      expect(readFileSync(join(stateDir, 'audit.log'), 'utf8')).not.toContain(VALUE);
    },
  );

  test.skipIf(!variant.run)('node: the same, and each run gets a fresh placeholder', async () => {
    const first = await runApproved(served.client, 'keyed', 'show.js');
    const second = await runApproved(served.client, 'keyed', 'show.js');
    expect(first.out.var).toMatch(PLACEHOLDER);
    expect(second.out.var).toMatch(PLACEHOLDER);
    expect(first.out.var).not.toBe(second.out.var);
    expect(first.out.environ).toContain(`API_TOKEN=${first.out.var}`);
    expect(JSON.stringify([first.out, second.out])).not.toContain(VALUE);
  });

  test.skipIf(!variant.run)("skill_list shows the secret's name and hosts, never a value", async () => {
    const list = await callTool(served.client, 'skill_list');
    const keyed = (list.value['skills'] as { name: string; scripts: Record<string, unknown>[] }[]).find((s) => s.name === 'keyed')!;
    expect(keyed.scripts.find((s) => s['script'] === 'show.py')).toMatchObject({
      secrets: [SHOWN],
      secretsWarning: expect.stringContaining('No owner grant'),
    });
    expect(list.text).not.toContain(VALUE);
  });
});

describe.skipIf(!bwrapWorks)('a secret without a value', () => {
  let served: Served;
  let stateDir: string;
  let secretsDir: string;
  const asked: string[] = [];

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    secretsDir = join(tempDir('secret-values'), 'values');
    mkdirSync(secretsDir, { mode: 0o700 });
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_SECRETS_DIR: secretsDir }, ERAS[0]!, {
      onElicit: (params) => {
        asked.push(params.message);
        return { action: 'accept', content: {} };
      },
    });
  });
  afterAll(async () => {
    await served?.close();
  });

  test('is SECRET_MISSING before approval: the person is never asked, nothing runs, the message names the secret and where it was looked for without a host path', async () => {
    const answer = await callTool(served.client, 'skill_run', { name: 'keyed', script: 'show.py', args: [] });
    const { code, message } = refusal(answer);
    expect(code).toBe('SECRET_MISSING');
    expect(message).toContain('needs the secret API_TOKEN');
    expect(message).toContain('SKILL_MCP_SECRET_API_TOKEN is not set and SKILL_MCP_SECRETS_DIR/API_TOKEN does not exist');
    expect(message).not.toContain(secretsDir);
    expect(message).not.toContain(SUITE_TMP);
    expect(asked).toEqual([]);
    expect(runsStarted(stateDir)).toBe(0);
    expect(audit(stateDir).filter((l) => l.event === 'run.prepare')).toContainEqual(
      expect.objectContaining({ skill: 'keyed', script: 'show.py', refused: 'secret-missing' }),
    );
  });

  test('a value that goes away after the preview is SECRET_MISSING at the run (nothing runs, the token stays unspent), and the approval runs once it is back', async () => {
    const file = join(secretsDir, 'API_TOKEN');
    writeFileSync(file, VALUE, { mode: 0o600 });
    chmodSync(file, 0o600);
    if (isRoot) chownSync(file, 0, 0);
    // The token path (no prompt): a preview now, the run later.
    const tokenState = join(tempDir('state'), 'state');
    const tokenless = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: tokenState, SKILL_MCP_SECRETS_DIR: secretsDir, MCP_CONFIRM_ELICITATION: 'off' },
      ERAS[0]!,
    );
    try {
      const preview = await askToken(tokenless.client, { name: 'keyed', script: 'show.py' });
      rmSync(file);
      const missing = refusal(
        await callTool(tokenless.client, 'skill_run', { name: 'keyed', script: 'show.py', args: [], confirmToken: preview.confirmToken }),
      );
      expect(missing.code).toBe('SECRET_MISSING');
      expect(runsStarted(tokenState)).toBe(0);
      expect(audit(tokenState)).toContainEqual(expect.objectContaining({ event: 'run.reject', reason: 'secret-missing', skill: 'keyed' }));
      writeFileSync(file, VALUE, { mode: 0o600 });
      const ran = await callTool(tokenless.client, 'skill_run', {
        name: 'keyed',
        script: 'show.py',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(String(ran.value['stdout'])).not.toContain(VALUE);
    } finally {
      await tokenless.close();
    }
  });
});

describe.skipIf(!bwrapWorks)('a client that shows a prompt', () => {
  test('the elicitation names the secret, its hosts and header and the standalone warning, never the value; approving runs it', async () => {
    const asked: string[] = [];
    const served = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state'), SKILL_MCP_SECRET_API_TOKEN: VALUE },
      ERAS[1]!,
      {
        onElicit: (params) => {
          asked.push(params.message);
          return { action: 'accept', content: {} };
        },
      },
    );
    try {
      const ran = await callTool(served.client, 'skill_run', { name: 'keyed', script: 'show.js', args: [] });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain(
        "secret API_TOKEN: sent only to api.example.com as Authorization: Bearer {value} by the run's proxy; the script holds a placeholder, never the value",
      );
      expect(asked[0]).toContain(
        "WARNING: No owner grant (standalone): the run's proxy sends your secret values (API_TOKEN to api.example.com)",
      );
      expect(asked[0]).not.toContain(VALUE);
      expect(JSON.parse(String(ran.value['stdout'])).var).toMatch(PLACEHOLDER);
    } finally {
      await served.close();
    }
  });
});

describe.skipIf(!bwrapWorks)('the approval binds the bindings', () => {
  test("a declared secret's hosts changing between the preview and the run is DRAFT_CHANGED, with a fresh preview of the new hosts; nothing ran", async () => {
    const skills = tempDir('secrets-switch');
    writeSkill(skills, 'switch', undefined);
    const decl = tempDir('secrets-switch-ops');
    put(decl, { 'switch.yaml': DECLARE(['api.example.com']) });
    const stateDir = join(tempDir('state'), 'state');
    const served = await serve(
      {
        SKILLS_DIR: skills,
        SKILL_MCP_STATE_DIR: stateDir,
        SKILL_MCP_DECLARATIONS: decl,
        SKILL_MCP_SECRET_API_TOKEN: VALUE,
        MCP_CONFIRM_ELICITATION: 'off',
      },
      ERAS[0]!,
    );
    try {
      const preview = await askToken(served.client, { name: 'switch', script: 'show.py' });
      expect((preview.preview.willRun as unknown as WillRunView).secrets).toEqual([SHOWN]);
      // Only the operator's file changes: the skill's bytes (and so the content digests) stay the same.
      put(decl, { 'switch.yaml': DECLARE(['other.example.com']) });
      const changed = await callTool(served.client, 'skill_run', {
        name: 'switch',
        script: 'show.py',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(changed.value).toMatchObject({
        status: 'draft-changed',
        error: { code: 'DRAFT_CHANGED' },
        preview: { willRun: { secrets: [{ ...SHOWN, hosts: ['other.example.com'] }] } },
      });
      expect((changed.value['preview'] as { willRun: { content: unknown } }).willRun.content).toEqual(
        preview.preview.willRun['content' as never],
      );
      expect(runsStarted(stateDir)).toBe(0);
      expect(changed.text).not.toContain(VALUE);
    } finally {
      await served.close();
    }
  });
});

describe("at a level without the run's own proxy (SKILL_MCP_BWRAP=off)", () => {
  test('a script with secrets is unavailable with the reason, in skill_run and skill_list; the value is never handed over and nothing runs', async () => {
    const stateDir = join(tempDir('state'), 'state');
    const served = await serve(
      {
        SKILLS_DIR: root,
        SKILL_MCP_STATE_DIR: stateDir,
        SKILL_MCP_BWRAP: 'off',
        SKILL_MCP_SECRET_API_TOKEN: VALUE,
        MCP_CONFIRM_ELICITATION: 'off',
      },
      ERAS[0]!,
    );
    try {
      const answer = await callTool(served.client, 'skill_run', { name: 'keyed', script: 'show.py', args: [] });
      const { code, message } = refusal(answer);
      expect(code).toBe('SANDBOX_UNAVAILABLE');
      expect(message).toContain('keyed/show.py uses secrets (API_TOKEN)');
      expect(message).toContain(`at this isolation level (${isRoot ? 'uid-sandbox' : 'same-uid'})`);
      expect(message).toContain('The value is never handed to the script instead');
      expect(answer.text).not.toContain(VALUE);
      const list = await callTool(served.client, 'skill_list');
      const keyed = (list.value['skills'] as { name: string; unavailableScripts?: Record<string, unknown>[] }[]).find(
        (s) => s.name === 'keyed',
      )!;
      expect(keyed.unavailableScripts).toContainEqual(
        expect.objectContaining({ script: 'show.py', why: expect.stringContaining('uses secrets (API_TOKEN)'), secrets: [SHOWN] }),
      );
      expect(list.text).not.toContain(VALUE);
      expect(runsStarted(stateDir)).toBe(0);
      expect(audit(stateDir).filter((l) => l.event === 'run.prepare')).toContainEqual(
        expect.objectContaining({ refused: 'secrets-unavailable' }),
      );
    } finally {
      await served.close();
    }
  });
});
