/**
 * @module `skill_list`: every served skill with what it declares and what may run here, plus
 * `problems`, so an empty or short list is never a mystery, and "nothing runs" is never confused
 * with "nothing declared".
 */
import { INTERPRETERS } from '../../shared/declaration.js';
import { grantFrom, grantScripts, HOSTED_GRANT_NOTE } from '../../shared/grant.js';
import type { FrontContext } from '../context.js';
import { uriFor } from '../catalog/uri.js';

export function skillList(front: FrontContext): Record<string, unknown> {
  const { catalog } = front;
  const isolation = front.isolation();
  const skills = catalog.skills().map((record) => {
    const scripts: unknown[] = [];
    const ungrantedScripts: unknown[] = [];
    const unavailableScripts: unknown[] = [];
    for (const grant of grantScripts(record.name, record.declaration, catalog.grant)) {
      const { script, interpreter, timeoutMs } = grant.declared;
      const unavailable = front.interpreterUnavailable(interpreter);
      if (unavailable) unavailableScripts.push({ script, interpreter, why: unavailable });
      else if (!grant.granted) ungrantedScripts.push({ script, interpreter, why: catalog.grant.kind === 'hosted-default' ? 'hosted mode grants nothing without MCP_SKILL_RUN' : 'not granted by MCP_SKILL_RUN' });
      else scripts.push({ script, interpreter, timeoutMs, env: grant.env });
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
    problems: catalog.problems,
    grantFrom: grantFrom(catalog.grant),
    ...(catalog.grant.kind === 'hosted-default' ? { grantNote: HOSTED_GRANT_NOTE } : {}),
    isolation,
    interpreters: [...INTERPRETERS],
  };
}
