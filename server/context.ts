/**
 * @module What every request handler of the front shares: the catalog, the runner link and the
 * confirmation settings. Created once at start and passed in (no module-level state).
 */
import { randomBytes } from 'node:crypto';
import type { RequestStateCodec, ServerContext } from '@modelcontextprotocol/server';
import { clientIdSchema, type Identity } from '../shared/protocol.js';
import { identityOfAuth } from './auth/resource-server.js';
import { SkillMcpError } from '../shared/errors.js';
import type { ErrorCode } from '../shared/errors.js';
import type { Announcer } from './announce.js';
import type { CatalogLimits } from '../shared/limits.js';
import type { Catalog } from './catalog/catalog.js';
import type { LiveCatalog } from './catalog/live.js';
import type { SkillRecord } from './catalog/skill.js';
import type { ApprovalState } from './confirm/request-state.js';
import type { ApprovalDesk } from './approve/desk.js';
import type { ConfirmSettings } from './confirm/settings.js';
import type { RunnerLink } from './runner-link.js';
import type { Visibility } from '../shared/visibility.js';

export interface FrontContext {
  catalog: Catalog;
  /** The walk limits the catalog was scanned with (the content check walks a skill again with them). */
  catalogLimits: CatalogLimits;
  /** Entries per prompts/list and directory page (SKILL_MCP_PAGE_SIZE, default 100). */
  pageSize: number;
  /** At most this many entries a skills/list page: the owner's SKILL_MCP_PAGE_SIZE when set; absent: bytes decide (catalog/source.ts). */
  skillsPageSize?: number;
  /** Tells connected clients when the catalog changed. */
  announcer: Announcer;
  /** The folders' watch (or poll); `listChanged` is advertised only while it runs. */
  live: LiveCatalog;
  watching: boolean;
  runner: RunnerLink;
  confirm: ConfirmSettings;
  /** Seals the state of an elicitation round (2026-07-28). */
  approvalCodec: RequestStateCodec<ApprovalState>;
  /** The approval page's pending approvals (HTTP with SKILL_MCP_APPROVAL_URL); undefined elsewhere. */
  approvals?: ApprovalDesk | undefined;
  /** Why this transport runs nothing at all (HTTP without a bearer token), checked before anything else. */
  runRefusal?: { code: ErrorCode; message: string } | undefined;
  /** A full garbage collection (before multi-MiB answers; see tools/collect.ts). */
  collectGarbage: () => void;
  /** The most a `skill_run` may carry in input files and stdin (SKILL_MCP_RUN_INPUT_BYTES). */
  runInputBytes: number;
  /**
   * Who is asking, as the runner counts clients for its per-client share of the run slots (32 hex
   * digits): the HTTP bearer token's hash, else this front's own session (stdio: one per process).
   */
  clientOf(ctx: ServerContext): string;
  /** The OAuth identity the HTTP gate verified for this request; undefined for stdio and the static token. */
  identityOf(ctx: ServerContext): Identity | undefined;
  requireSkill(name: string): SkillRecord;
  /** Which skills which identities see (SKILL_MCP_VISIBLE); auth/visible-catalog.ts applies it per request. */
  visibility: Visibility;
}

/** The served skill named `name` in `catalog`, or UNKNOWN_SKILL naming some that are served. */
export function requireSkillIn(catalog: Catalog, name: string): SkillRecord {
  const record = catalog.get(name);
  if (!record) {
    const known = catalog.skills().map((s) => s.name);
    const hint =
      known.length > 0
        ? `Served skills: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', ...' : ''}.`
        : 'No skill is served; skill_list shows the problems.';
    throw new SkillMcpError('UNKNOWN_SKILL', `no skill named ${JSON.stringify(name)} is served. ${hint}`);
  }
  return record;
}

export function createFrontContext(fields: Omit<FrontContext, 'requireSkill' | 'clientOf' | 'identityOf'>): FrontContext {
  const { catalog } = fields;
  // One stdio process serves one client connection: its session is the client.
  const session = randomBytes(16).toString('hex');
  return {
    ...fields,
    clientOf(ctx) {
      const fromToken = ctx.http?.authInfo?.clientId;
      return fromToken !== undefined && clientIdSchema.safeParse(fromToken).success ? fromToken : session;
    },
    identityOf: (ctx) => identityOfAuth(ctx.http?.authInfo),
    requireSkill: (name) => requireSkillIn(catalog, name),
  };
}
