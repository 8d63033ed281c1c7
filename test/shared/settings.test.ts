/**
 * The settings both processes read (shared/settings.ts): one function, so one answer. Each bad
 * value has one policy — stop (both refuse to start, with the same message) or default (both
 * carry on with the default and say so) — and a secret's value never appears in a message.
 */
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';
import { describe, expect, test } from 'vitest';
import { readSharedSettings, rootProblems, startupReport } from '../../shared/settings.js';
import { ConfigError, refuseToStart } from '../../shared/settings-schema.js';

const BUNDLED = '/bundled/skills';

describe('readSharedSettings', () => {
  test('defaults when nothing is set: bundled skills, standalone, declarations, 600 s, no secret', () => {
    expect(readSharedSettings({ HOME: '/home/x' }, BUNDLED)).toMatchObject({
      roots: [BUNDLED],
      rootsFrom: undefined,
      hosted: false,
      grant: { kind: 'declaration' },
      confirmTtlSeconds: 600,
      confirmSecret: undefined,
      allowUnscrubbed: false,
      limits: { maxSkills: DEFAULT_CATALOG_LIMITS.maxSkills },
      // The state folder's default is root's /var/lib/skill-mcp or the person's own (shared/state-dir.ts; both tested there).
      stateDir: process.getuid?.() === 0 ? '/var/lib/skill-mcp' : '/home/x/.local/state/skill-mcp',
      issues: [],
    });
  });

  test.each([['abc'], ['60s'], ['0'], ['-5'], ['1e3'], ['604801']])(
    'MCP_CONFIRM_TTL_SECONDS=%s stops (no guessed lifetime for an approval)',
    (raw) => {
      const { issues } = readSharedSettings({ MCP_CONFIRM_TTL_SECONDS: raw }, BUNDLED);
      expect(() => refuseToStart(issues)).toThrow(ConfigError);
      expect(() => refuseToStart(issues)).toThrow(
        `MCP_CONFIRM_TTL_SECONDS=${JSON.stringify(raw)} is not a whole number of seconds from 1 to 604800`,
      );
    },
  );

  test('a short MCP_CONFIRM_SECRET stops, and the message gives its length, never the value', () => {
    const { issues } = readSharedSettings({ MCP_CONFIRM_SECRET: 'hunter2' }, BUNDLED);
    expect(() => refuseToStart(issues)).toThrow('MCP_CONFIRM_SECRET (a value of 7 characters) is not at least 32 characters');
    expect(issues.map((i) => i.message).join()).not.toContain('hunter2');
    expect(readSharedSettings({ MCP_CONFIRM_SECRET: 'x'.repeat(32) }, BUNDLED).confirmSecret).toBe('x'.repeat(32));
  });

  test('tuning values and MCP_SKILL_ALLOW_UNSCRUBBED keep their (safer) default and are reported, not fatal', () => {
    const settings = readSharedSettings({ SKILL_MCP_MAX_SKILLS: 'lots', MCP_SKILL_ALLOW_UNSCRUBBED: 'yes' }, BUNDLED);
    expect(refuseToStart(settings.issues)).toHaveLength(2);
    expect(settings).toMatchObject({ allowUnscrubbed: false, limits: { maxSkills: DEFAULT_CATALOG_LIMITS.maxSkills } });
    expect(startupReport(settings)).toEqual([
      'MCP_SKILL_ALLOW_UNSCRUBBED="yes" is not 1 or 0; using 0 (a hosted runner that cannot clear its environ runs nothing)',
      `SKILL_MCP_MAX_SKILLS="lots" is not a positive integer; using ${DEFAULT_CATALOG_LIMITS.maxSkills}`,
    ]);
  });

  test('a grant that is not JSON grants nothing and is in the start-up report', () => {
    const settings = readSharedSettings({ MCP_SKILL_RUN: '[{' }, BUNDLED);
    expect(settings.grant).toEqual({ kind: 'owner', rows: [], error: 'MCP_SKILL_RUN is not valid JSON; it grants nothing' });
    expect(startupReport(settings)).toEqual(['MCP_SKILL_RUN is not valid JSON; it grants nothing']);
  });

  test('MCP_SKILLS_PATH wins over SKILLS_DIR and marks hosted; a missing root is reported with the variable that named it', () => {
    const settings = readSharedSettings({ MCP_SKILLS_PATH: '/no/such/root', SKILLS_DIR: '/ignored' }, BUNDLED);
    expect(settings).toMatchObject({
      roots: ['/no/such/root'],
      rootsFrom: 'MCP_SKILLS_PATH',
      hosted: true,
      grant: { kind: 'hosted-default' },
    });
    expect(rootProblems(settings)).toEqual(['MCP_SKILLS_PATH: the skill folder /no/such/root does not exist; no skill is served from it']);
  });
});
