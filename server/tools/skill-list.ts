/**
 * @module `skill_list`: every served skill with what it declares and what may run here, plus
 * `problems`, so an empty or short list is never a mystery, and "nothing runs" is never confused
 * with "nothing declared". What may run comes from the runner (which re-derives it); when the
 * runner cannot be reached, the scripts are listed as unavailable with that reason.
 */
import { INTERPRETERS } from '../../shared/declaration.js';
import { grantFrom, grantScripts, HOSTED_GRANT_NOTE } from '../../shared/grant.js';
import type { Problem } from '../../shared/problems.js';
import type { DescribeResult } from '../../shared/protocol.js';
import type { FrontContext } from '../context.js';
import { uriFor } from '../catalog/uri.js';

export async function skillList(front: FrontContext): Promise<Record<string, unknown>> {
  const { catalog } = front;
  let described: DescribeResult | undefined;
  let runnerWhy: string | undefined;
  try {
    described = await front.runner.describe();
  } catch (error) {
    runnerWhy = error instanceof Error ? error.message : String(error);
  }
  // A copy: the catalog's own list must not grow with every call.
  const problems: Problem[] = [...catalog.problems];
  if (described && !described.environ.scrubbed && !described.runsAllowed) {
    problems.push({ path: 'runner', reason: 'environ-unscrubbed', detail: described.runsRefusedWhy ?? 'the runner could not clear its environ; no script runs' });
  }
  const mismatch = described?.configMismatch;
  if (mismatch) problems.push({ path: 'runner', reason: 'config-mismatch', detail: mismatch.message });
  // Nothing runs through this front at all (HTTP without a token, a runner configured otherwise): say why per script.
  const refusedWhy = front.runRefusal?.message ?? mismatch?.message;
  const skills = catalog.skills().map((record) => {
    const scripts: unknown[] = [];
    const ungrantedScripts: unknown[] = [];
    const unavailableScripts: unknown[] = [];
    const runnerSkill = described?.skills.find((s) => s.name === record.name);
    for (const grant of grantScripts(record.name, record.declaration, catalog.grant)) {
      const { script, interpreter, timeoutMs } = grant.declared;
      const info = runnerSkill?.scripts.find((s) => s.script === script);
      // An interpreter outside the fixed set can never run, whatever is granted: say so first.
      if (!(INTERPRETERS as readonly string[]).includes(interpreter)) {
        unavailableScripts.push({ script, interpreter, why: `interpreter "${interpreter}" is not one of ${INTERPRETERS.join(', ')}; this script never runs` });
      } else if (grant.granted && refusedWhy !== undefined) unavailableScripts.push({ script, interpreter, why: refusedWhy });
      else if (!grant.granted || info?.granted === false) {
        ungrantedScripts.push({ script, interpreter, why: catalog.grant.kind === 'hosted-default' ? 'hosted mode grants nothing without MCP_SKILL_RUN' : 'not granted by MCP_SKILL_RUN' });
      } else if (!described) unavailableScripts.push({ script, interpreter, why: runnerWhy });
      else if (!info || !info.runnable) unavailableScripts.push({ script, interpreter, why: info?.why ?? 'the runner does not find this script' });
      else {
        scripts.push({
          script, interpreter, timeoutMs, envNames: info.envNames,
          ...(info.envNotSet.length > 0 ? { envNotSet: info.envNotSet } : {}),
          ...(info.envWarning !== undefined ? { envWarning: info.envWarning } : {}),
          ...(info.egress !== undefined ? { egress: info.egress } : {}),
          ...(info.egressWarning !== undefined ? { egressWarning: info.egressWarning } : {}),
          ...(info.egressNote !== undefined ? { egressNote: info.egressNote } : {}),
        });
      }
    }
    return {
      name: record.name,
      description: record.description,
      ...(record.whenToUse !== undefined ? { whenToUse: record.whenToUse } : {}),
      fileCount: record.files.length,
      published: record.published,
      ...(record.published ? { uri: uriFor(record.name, 'SKILL.md') } : {}),
      runnable: scripts.length > 0,
      scripts,
      ...(ungrantedScripts.length > 0 ? { ungrantedScripts } : {}),
      ...(unavailableScripts.length > 0 ? { unavailableScripts } : {}),
    };
  });
  return {
    skills,
    problems,
    grantFrom: grantFrom(catalog.grant),
    ...(catalog.grant.kind === 'hosted-default' ? { grantNote: HOSTED_GRANT_NOTE } : {}),
    isolation: described
      ? {
          ...described.isolation, interpreters: described.interpreters,
          ...(front.runner.restarts() > 0 ? { runnerRestarts: front.runner.restarts() } : {}),
          ...(mismatch ? { configMismatch: mismatch } : {}),
        }
      : { level: 'unavailable', detail: `no script can run: ${runnerWhy}` },
  };
}
