/**
 * @module Which declaration applies to a skill, and where it came from (docs/architecture.md §4).
 * The front's catalog and the runner's re-derivation both call {@link resolveDeclaration}, so they
 * can never disagree on it. Three places hold the same fields (shared/declaration.ts):
 *
 * - `frontmatter`: the `mcp-host:` block of SKILL.md;
 * - `sidecar`: `mcp-host.yaml` at the skill's root, the fields at top level (SKILL.md stays valid
 *   under the Agent Skills specification);
 * - `operator`: `SKILL_MCP_DECLARATIONS/<skill>.yaml`, for skills the operator did not write, with
 *   an optional `pin: sha256:<content digest>` (shared/content-digest.ts: the `content.files` a
 *   preview shows).
 *
 * An operator declaration replaces the skill's own (which is then ignored, and `replaces` says so).
 * A skill declaring both in its frontmatter and in a sidecar gets no scripts: which one its author
 * meant is never guessed. Every failure costs the skill its scripts, never its instructions.
 */
import { join } from 'node:path';
import { parseDeclaration, type Declaration } from './declaration.js';
import { declarationsDirUnusable, readDeclarationFile } from './declaration-files.js';
import { FrontmatterError, parseStrict, type Frontmatter, type JsonValue } from './frontmatter.js';

export const DECLARATION_FROM = ['frontmatter', 'sidecar', 'operator'] as const;
export type DeclarationFrom = (typeof DECLARATION_FROM)[number];
/** The sidecar's name at the skill's root. */
export const SIDECAR_FILE = 'mcp-host.yaml';
/** How an operator declaration is named to the model and in problems: never the folder's host path. */
export const OPERATOR_PLACE = 'SKILL_MCP_DECLARATIONS';
const PIN = /^sha256:([0-9a-f]{64})$/;

export interface DeclarationOrigin {
  from: DeclarationFrom;
  /** Operator only: the declaration carries a `pin` (and it matched, when a declaration is returned). */
  pinned?: boolean;
  /** Operator only: the skill's own declarations this one replaced (they were not read). */
  replaces?: ('frontmatter' | 'sidecar')[];
}

export interface DeclarationProblem {
  /** Which file it is about: the skill's SKILL.md or sidecar, or the operator's file (or folder). */
  at: 'SKILL.md' | 'mcp-host.yaml' | 'operator';
  detail: string;
}

export interface ResolvedDeclaration {
  /** Absent: nothing of the skill is runnable (no declaration, or a refused one: `problems` say why). */
  declaration?: Declaration;
  /** The place chosen, also when what is there was refused. Absent: the skill declares nothing (or both, see problems). */
  origin?: DeclarationOrigin;
  problems: DeclarationProblem[];
}

export type ContentDigest = { ok: true; digest: string } | { ok: false; why: string };

export interface ResolveInput {
  /** The skill's served name (an operator file is `<name>.yaml`). */
  name: string;
  /** The skill's real directory (its sidecar is read there, never through a link). */
  realDir: string;
  /** SKILL.md's frontmatter as strictly parsed (shared/frontmatter.ts), and its `mcp-host:` block's own parse error. */
  frontmatter: Frontmatter;
  declarationError?: string | undefined;
  /** `SKILL_MCP_DECLARATIONS` (shared/settings.ts), undefined when unset. */
  declarationsDir: string | undefined;
  /** The skill's content digest; called only for a pinned operator declaration. */
  contentDigest(): Promise<ContentDigest>;
}

const NOT_RUNNABLE = "the skill's scripts are not runnable, its instructions are still served";

/** Parses a declaration file's text: the fields at top level, or a problem. */
function parseFile(text: string, shown: string): { value: Frontmatter } | { why: string } {
  try {
    return { value: parseStrict(text, 0).value };
  } catch (error) {
    if (!(error instanceof FrontmatterError)) throw error;
    return { why: `${shown} does not parse: ${error.message}; ${NOT_RUNNABLE}` };
  }
}

async function operatorDeclaration(
  input: ResolveInput,
  dir: string,
  replaces: DeclarationOrigin['replaces'] & object,
): Promise<ResolvedDeclaration | undefined> {
  const shown = `${OPERATOR_PLACE}/${input.name}.yaml`;
  const read = readDeclarationFile(join(dir, `${input.name}.yaml`), shown);
  if (read.kind === 'absent') return undefined;
  const origin: DeclarationOrigin = { from: 'operator', ...(replaces.length > 0 ? { replaces } : {}) };
  const fail = (detail: string): ResolvedDeclaration => ({ origin, problems: [{ at: 'operator', detail }] });
  if (read.kind === 'bad')
    return fail(`${read.why}; the operator declaration is not applied and the skill's own is not used; ${NOT_RUNNABLE}`);
  const parsed = parseFile(read.text, shown);
  if ('why' in parsed) return fail(parsed.why);
  const { pin, ...fields } = parsed.value as Record<string, JsonValue>;
  if (pin !== undefined) {
    origin.pinned = true;
    if (typeof pin !== 'string' || !PIN.test(pin))
      return fail(
        `${shown}: pin must be sha256: and the skill's 64-hex content digest (skill_run's preview shows it as content.files); ${NOT_RUNNABLE}`,
      );
  }
  const result = parseDeclaration(fields, { keyPrefix: '', what: `operator declaration ${shown}` });
  const problems: DeclarationProblem[] = result.problems.map((detail) => ({ at: 'operator', detail }));
  if (!result.declaration) return { origin, problems };
  if (typeof pin === 'string') {
    const digest = await input.contentDigest();
    // Security: the operator vouched for these bytes only; changed ones get neither this declaration nor the skill's own.
    if (!digest.ok)
      return {
        origin,
        problems: [
          ...problems,
          {
            at: 'operator',
            detail: `${shown} is pinned, but the skill's content digest cannot be computed (${digest.why}); the declaration is not applied; ${NOT_RUNNABLE}`,
          },
        ],
      };
    if (`sha256:${digest.digest}` !== pin) {
      return {
        origin,
        problems: [
          ...problems,
          {
            at: 'operator',
            detail: `${shown} is pinned to ${pin}, but the skill's content is now sha256:${digest.digest}: the skill changed since it was pinned, so the declaration is not applied (nor the skill's own); ${NOT_RUNNABLE}. Review the change, then update the pin`,
          },
        ],
      };
    }
  }
  return { declaration: result.declaration, origin, problems };
}

/** The declaration that applies to the skill, where it came from, and every problem on the way. */
export async function resolveDeclaration(input: ResolveInput): Promise<ResolvedDeclaration> {
  const inFrontmatter = Object.hasOwn(input.frontmatter, 'mcp-host') || input.declarationError !== undefined;
  const sidecar = readDeclarationFile(join(input.realDir, SIDECAR_FILE), SIDECAR_FILE);
  const replaces: ('frontmatter' | 'sidecar')[] = [
    ...(inFrontmatter ? ['frontmatter' as const] : []),
    ...(sidecar.kind !== 'absent' ? ['sidecar' as const] : []),
  ];

  if (input.declarationsDir !== undefined) {
    const unusable = declarationsDirUnusable(input.declarationsDir);
    // Security: an unreadable folder might hold this skill's replacement; its own is not guessed to apply.
    if (unusable !== undefined)
      return {
        problems: [
          {
            at: 'operator',
            detail: `the operator's declarations folder (${OPERATOR_PLACE}) ${unusable}; no skill's scripts are runnable until it can be read or the variable is unset; instructions are still served`,
          },
        ],
      };
    const operator = await operatorDeclaration(input, input.declarationsDir, replaces);
    if (operator) return operator;
  }

  if (replaces.length === 2) {
    return {
      problems: [
        {
          at: 'SKILL.md',
          detail: `the skill declares in both SKILL.md (mcp-host:) and ${SIDECAR_FILE}; which one is meant is not guessed: keep one (skill-mcp check --fix moves the block into ${SIDECAR_FILE}). Until then ${NOT_RUNNABLE}`,
        },
      ],
    };
  }
  if (sidecar.kind !== 'absent') {
    const origin: DeclarationOrigin = { from: 'sidecar' };
    if (sidecar.kind === 'bad') return { origin, problems: [{ at: 'mcp-host.yaml', detail: `${sidecar.why}; ${NOT_RUNNABLE}` }] };
    const parsed = parseFile(sidecar.text, SIDECAR_FILE);
    if ('why' in parsed) return { origin, problems: [{ at: 'mcp-host.yaml', detail: parsed.why }] };
    const result = parseDeclaration(parsed.value, { keyPrefix: '', what: SIDECAR_FILE });
    return {
      ...(result.declaration ? { declaration: result.declaration } : {}),
      origin,
      problems: result.problems.map((detail) => ({ at: 'mcp-host.yaml', detail })),
    };
  }
  if (input.declarationError !== undefined) {
    return {
      origin: { from: 'frontmatter' },
      problems: [{ at: 'SKILL.md', detail: `the mcp-host block does not parse: ${input.declarationError}; ${NOT_RUNNABLE}` }],
    };
  }
  const block = input.frontmatter['mcp-host'];
  const result = parseDeclaration(block);
  const problems = result.problems.map((detail) => ({ at: 'SKILL.md' as const, detail }));
  if (block === undefined || block === null) return { problems };
  return { ...(result.declaration ? { declaration: result.declaration } : {}), origin: { from: 'frontmatter' }, problems };
}

/** Every operator file the catalog found with no served skill of its name: reported, never silently ignored. */
export function strayDeclarationProblems(
  entries: readonly string[],
  served: (name: string) => boolean,
  skillOf: (entry: string) => string | undefined,
): { entry: string; detail: string }[] {
  const out: { entry: string; detail: string }[] = [];
  for (const entry of entries) {
    const skill = skillOf(entry);
    if (skill === undefined)
      out.push({
        entry,
        detail: `${JSON.stringify(entry)} is not a declaration (operator declarations are named <skill-name>.yaml); it is not read`,
      });
    else if (!served(skill))
      out.push({
        entry,
        detail: `${JSON.stringify(entry)} declares a skill "${skill}" that is not served; it is not applied (check the name against skill_list)`,
      });
  }
  return out;
}
