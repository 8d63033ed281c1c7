/**
 * @module One identity's view of the catalog (SKILL_MCP_VISIBLE): the same catalog object with the
 * skills this identity may not see left out of every way in — `skills()`, `published()`, `get()`,
 * the search, the list fingerprints cursors carry, and the problems that name them. Every tool,
 * the skills extension, resources and prompts read the catalog through the request's front, so
 * one view covers them all. Without limited skills the front is returned as it is.
 */
import { createHash } from 'node:crypto';
import type { Identity } from '../../shared/protocol.js';
import { limitsAny, visibleTo } from '../../shared/visibility.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SkillRecord } from '../catalog/skill.js';
import { requireSkillIn, type FrontContext } from '../context.js';

function fingerprint(base: string, names: readonly string[]): string {
  return createHash('sha256').update(base).update('\0').update(names.join('\n')).digest('base64url').slice(0, 12);
}

/**
 * Security: a hidden skill must not be learnable from any answer — not listed, not found, not
 * searched, not named by a problem, and not inferable from a cursor (its fingerprint covers only
 * what this identity sees).
 */
export function visibleCatalog(catalog: Catalog, sees: (name: string) => boolean): Catalog {
  const hiddenPaths = (): string[] =>
    catalog
      .skills()
      .filter((r) => !sees(r.name))
      .map((r) => r.displayPath);
  const search = {
    search(query: string, limit: number) {
      const hidden = catalog.skills().length - catalog.skills().filter((r) => sees(r.name)).length;
      return catalog.search
        .search(query, limit + hidden)
        .filter((hit) => sees(hit.name))
        .slice(0, limit);
    },
  };
  const overrides: Record<string | symbol, unknown> = {
    skills: (): SkillRecord[] => catalog.skills().filter((r) => sees(r.name)),
    published: (): SkillRecord[] => catalog.published().filter((r) => sees(r.name)),
    get: (name: string): SkillRecord | undefined => (sees(name) ? catalog.get(name) : undefined),
  };
  return new Proxy(catalog, {
    get(target, prop) {
      if (prop in overrides) return overrides[prop];
      if (prop === 'search') return search;
      if (prop === 'servedFingerprint')
        return fingerprint(
          target.servedFingerprint,
          target
            .skills()
            .filter((r) => sees(r.name))
            .map((r) => r.name),
        );
      if (prop === 'publishedFingerprint')
        return fingerprint(
          target.publishedFingerprint,
          target
            .published()
            .filter((r) => sees(r.name))
            .map((r) => r.name),
        );
      if (prop === 'problems') {
        const hidden = hiddenPaths();
        return target.problems.filter((p) => !hidden.some((path) => p.path === path || p.path.startsWith(`${path}/`)));
      }
      // Everything else is the catalog's own (its methods keep their private state).
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The front this identity's request is served from. */
export function visibleFront(front: FrontContext, identity: Identity | undefined): FrontContext {
  if (!limitsAny(front.visibility)) return front;
  const catalog = visibleCatalog(front.catalog, (name) => visibleTo(front.visibility, name, identity));
  return { ...front, catalog, requireSkill: (name) => requireSkillIn(catalog, name) };
}
