/**
 * @module The plain happy path of two read-only 2026-07-28 requests, `resources/read` and
 * `skills/list`, answered without the SDK's per-request pipeline (a web `Request`, a fresh
 * `McpServer` with every tool and prompt, a per-request transport, zod, `Response.json`): most of
 * what such a request costs over HTTP (bench/RESULTS.md, "A fast path for two reads"). The
 * result comes from the very functions the SDK's handlers call (skill-read.ts, skills-list.ts),
 * through the same per-identity view (front.ts `skillReadsFor`). Anything short of the plain
 * happy path — an odd header, an extra key, any error — is left to the SDK handler, which answers
 * it exactly as it always did: this module never writes an error.
 *
 * What `createMcpHandler` does for a modern request (its `handle` and `serveModern`), and why a
 * request this module takes may skip it:
 * - 415 unless the content type is JSON: {@link isJsonContentType} is required here too.
 * - read and classify the body ({@link classifyInboundRequest}, era, envelope, header cross-checks):
 *   called here with the same inputs; only `modern`/`request` on {@link MODERN_REVISION} is taken.
 * - the supported-revision gate: only {@link MODERN_REVISION}, which this SDK serves, is taken.
 * - `validateStandardRequestHeaders` (MCP-Protocol-Version, Mcp-Method present; Mcp-Name present,
 *   decoded and equal to `params.uri`): both headers must equal the body's exactly, and Mcp-Name
 *   must equal the URI byte for byte and not be a base64 sentinel; skills/list has no Mcp-Name
 *   source, and one sent anyway is left to the SDK.
 * - required client capabilities (`requiredClientCapabilitiesForRequest`): none for these methods.
 * - the factory (a fresh `McpServer`): replaced by `skillReadsFor`, the same view it builds.
 * - `subscriptions/listen` and the tools/call `Mcp-Param-*` checks: other methods.
 * - the scope challenge (`findScopeChallenge`): ours are declared on skill_run only
 *   (tools/definitions.ts); the skills extension's template declares none, so a read or a list is
 *   never challenged, with OAuth configured or not. The gate's own `skills:read` check ran before.
 * - `setNegotiatedProtocolVersion`, `installModernOnlyHandlers` (server/discover),
 *   `seedClientIdentityFromEnvelope`: state of the per-request server, which the two handlers read
 *   only to know the era (this module answers the 2026 era only).
 * - the transport: JSON or SSE. `PerRequestHTTPServerTransport` ignores `Accept` and answers
 *   `application/json` unless the handler sends a message before its result (progress, logging):
 *   neither handler does, and a request asking for progress (`progressToken`) or a log level in
 *   its `_meta` is left to the SDK. Batches, the 2025 era and the 406s are the legacy path's.
 * - the encode contract (`resultType`, the cache fields of cacheable results, `serverInfo` in
 *   `_meta`): mirrored in {@link encodeResult} for these two methods, tested byte for byte
 *   against the SDK's answers (test/http/fast-path.test.ts).
 * - on a thrown error, the error answer: here, the SDK handler is asked instead.
 */
import { classifyInboundRequest, isJsonContentType, SERVER_INFO_META_KEY, type AuthInfo } from '@modelcontextprotocol/server';
import { SERVER_INFO, type SkillReads } from '../front.js';
import { readSkillResource } from '../skill-read.js';
import { jsonOf } from '../pre-encoded.js';
import { FIRST_MODERN_VERSION, skillsListResult } from '../skills-list.js';

/** The one revision answered here: the encode contract below is this revision's. */
const MODERN_REVISION = FIRST_MODERN_VERSION;

/** The per-request envelope's keys; any other `_meta` key (progressToken, logLevel, trace context) goes to the SDK. */
const ENVELOPE_KEYS = new Set([
  'io.modelcontextprotocol/protocolVersion',
  'io.modelcontextprotocol/clientInfo',
  'io.modelcontextprotocol/clientCapabilities',
]);

/** A request this module answers. */
export type FastRequest =
  | { id: string | number; method: 'resources/read'; uri: string }
  | { id: string | number; method: 'skills/list'; cursor: string | undefined };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when every key of `object` is in `allowed`. */
function onlyKeys(object: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in object) if (!allowed.has(key)) return false;
  return true;
}

const READ_PARAMS = new Set(['uri', '_meta']);
const LIST_PARAMS = new Set(['cursor', '_meta']);

/**
 * The request when it is the plain happy path of a 2026-07-28 `resources/read` or `skills/list`
 * POST (method, path and auth already checked by the caller), else undefined: the SDK's.
 */
export function fastRequest(headers: Headers, body: unknown): FastRequest | undefined {
  if (!isPlainObject(body)) return undefined;
  const { method, params, id } = body;
  if (method !== 'resources/read' && method !== 'skills/list') return undefined;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  if (!isJsonContentType(headers.get('content-type'))) return undefined;
  const protocolVersionHeader = headers.get('mcp-protocol-version');
  const mcpMethodHeader = headers.get('mcp-method');
  const mcpNameHeader = headers.get('mcp-name');
  // Security: header smuggling — exactly equal, not equal after the SDK's whitespace stripping: a
  // second value (joined with ", ") or padding is the SDK's to judge (and refuse).
  if (protocolVersionHeader !== MODERN_REVISION || mcpMethodHeader !== method) return undefined;
  if (!isPlainObject(params) || !isPlainObject(params['_meta']) || !onlyKeys(params['_meta'], ENVELOPE_KEYS)) return undefined;
  if (params['_meta']['io.modelcontextprotocol/protocolVersion'] !== MODERN_REVISION) return undefined;
  let request: FastRequest;
  if (method === 'resources/read') {
    const uri = params['uri'];
    if (!onlyKeys(params, READ_PARAMS) || typeof uri !== 'string') return undefined;
    // Security: a proxy routing on Mcp-Name must see the resource the body reads: the URI itself,
    // never a base64 sentinel (`=?base64?…?=`, which the SDK decodes and checks first).
    if (mcpNameHeader !== uri || uri.startsWith('=?')) return undefined;
    request = { id, method, uri };
  } else {
    const cursor = params['cursor'];
    if (!onlyKeys(params, LIST_PARAMS) || (cursor !== undefined && typeof cursor !== 'string') || mcpNameHeader !== null) return undefined;
    request = { id, method, cursor };
  }
  // Security: nothing the SDK would refuse is answered here — last, its own verdict on everything
  // else (JSON-RPC shape, the envelope's schema, header/body cross-checks).
  const route = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader,
    mcpMethodHeader,
    ...(mcpNameHeader !== null ? { mcpNameHeader } : {}),
    body,
  });
  if (route.kind !== 'modern' || route.messageKind !== 'request' || route.classification.revision !== MODERN_REVISION) return undefined;
  return request;
}

/** The SDK's cache fields for a cacheable result that names none (front.ts configures no `cacheHints`). */
const SDK_DEFAULT_CACHE_FIELDS = { ttlMs: 0, cacheScope: 'private' } as const;

/** What the SDK stamps on every 2026-07-28 result: its server's identity. */
const RESULT_META = { [SERVER_INFO_META_KEY]: SERVER_INFO };

/**
 * The SDK's 2026-07-28 encode contract for these two results, in its order: `resultType`
 * (`complete`), then for a cacheable result (`resources/read`; skills/list is not one, its handler
 * adds the fields itself) `ttlMs`/`cacheScope` (the defaults, 0 and private, as nothing is
 * configured for it), then `_meta` with the server's identity — as the members to add after the
 * result's own. A result already carrying any of them is not ours to encode (undefined): the SDK's
 * rules for that case are left to the SDK.
 */
function stampsFor(method: FastRequest['method'], result: Record<string, unknown>): Record<string, unknown> | undefined {
  if ('resultType' in result || '_meta' in result) return undefined;
  if (method === 'skills/list') return { resultType: 'complete', _meta: RESULT_META };
  if ('ttlMs' in result || 'cacheScope' in result) return undefined;
  return { resultType: 'complete', ...SDK_DEFAULT_CACHE_FIELDS, _meta: RESULT_META };
}

/**
 * The whole JSON-RPC answer to `request`, serialized as the SDK's transport does (result, then
 * `jsonrpc`, then `id`), in pieces to send one after the other (a skills/list page is joined from
 * its entries' JSON, pre-encoded.ts, never copied into one buffer); or undefined when the result
 * could not be computed: the SDK handler is then asked, and answers its own error.
 */
export async function answerFast(
  readsFor: (authInfo: AuthInfo | undefined) => SkillReads,
  authInfo: AuthInfo | undefined,
  request: FastRequest,
): Promise<Buffer[] | undefined> {
  let result: Record<string, unknown>;
  try {
    // Security: the caller's own view of the catalog (SKILL_MCP_VISIBLE), picked as the SDK path's
    // factory picks it: another identity's hidden skill is not found here either.
    const { source } = readsFor(authInfo);
    result =
      request.method === 'resources/read'
        ? await readSkillResource(source, request.uri)
        : await skillsListResult(source, request.cursor, true);
  } catch {
    return undefined;
  }
  const stamps = stampsFor(request.method, result);
  if (stamps === undefined) return undefined;
  const encoded = jsonOf(result, stamps) ?? [Buffer.from(JSON.stringify({ ...result, ...stamps }))];
  return [Buffer.from('{"result":'), ...encoded, Buffer.from(`,"jsonrpc":"2.0","id":${JSON.stringify(request.id)}}`)];
}
