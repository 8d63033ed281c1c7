/**
 * @module Start-up shared by every transport: read the configuration, scan the catalog once,
 * build the context. Configuration mistakes become `config` problems, never silent defaults.
 */
import { skillRoots } from '../shared/config.js';
import { readCatalogLimits } from '../shared/limits.js';
import type { Problem } from '../shared/problems.js';
import { Catalog } from './catalog/catalog.js';
import { createFrontContext, type FrontContext } from './context.js';

const DEFAULT_PAGE_SIZE = 100;

export async function startFront(env: NodeJS.ProcessEnv, bundledSkills: string): Promise<FrontContext> {
  const { limits, errors } = readCatalogLimits(env);
  const configProblems: Problem[] = errors.map((detail) => ({ path: 'configuration', reason: 'config', detail }));
  let pageSize = DEFAULT_PAGE_SIZE;
  const rawPage = env['SKILL_MCP_PAGE_SIZE'];
  if (rawPage !== undefined && rawPage !== '') {
    const value = Number(rawPage);
    if (Number.isSafeInteger(value) && value > 0) pageSize = value;
    else configProblems.push({ path: 'configuration', reason: 'config', detail: `SKILL_MCP_PAGE_SIZE=${JSON.stringify(rawPage)} is not a positive integer; using ${DEFAULT_PAGE_SIZE}` });
  }
  const catalog = await Catalog.load({ roots: skillRoots(env, bundledSkills), limits, env, configProblems });
  return createFrontContext(catalog, pageSize);
}
