/**
 * Calling skill_run on the workspace skill (test/e2e/workspace-skill.ts) and reading the answer
 * whole: the structured value and the embedded resources. Shared by skill-run-workspace.test.ts
 * (level), skill-run-workspace-once.test.ts (front), skill-run-workspace-cap.test.ts and
 * pdf-skill.test.ts (any skill: callSkillRun).
 */
import { createHash } from 'node:crypto';
import type { Served } from './harness.js';

export type Resource = { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };
export interface RunAnswer {
  isError: boolean;
  value: Record<string, unknown>;
  resources: Resource[];
}

export const sha = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

/** One skill_run call of `skill` (`args` adds to or overrides name and args), its answer read whole. */
export async function callSkillRun(
  client: Served['client'],
  skill: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<RunAnswer> {
  // Past the SDK's 60 s default: making 20k files can take longer than that on a loaded machine.
  const result = await client.callTool(
    { name: 'skill_run', arguments: { name: skill, args: [], ...args } },
    { timeout: 300_000, ...(signal ? { signal } : {}) },
  );
  const content = result.content as ({ type: 'text'; text: string } | Resource)[];
  const text = content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('');
  return {
    isError: result.isError === true,
    value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown>,
    resources: content.filter((c): c is Resource => c.type === 'resource'),
  };
}

/** One skill_run call of the `workspace` skill. */
export function callWorkspace(client: Served['client'], args: Record<string, unknown>, signal?: AbortSignal): Promise<RunAnswer> {
  return callSkillRun(client, 'workspace', args, signal);
}
