/**
 * @module A zod schema whose JSON Schema is computed once. The SDK converts a tool's input schema
 * to JSON Schema on every `tools/list` and on every `tools/call` (its `Mcp-Param-*` header scan),
 * per `McpServer` — over HTTP that is per request. The conversion of one schema for one target
 * never changes, so it is remembered per target and handed out deep-frozen: a caller that tried
 * to change the shared copy would throw instead of altering what the next request is told.
 */
import type * as z from 'zod';

type Convert = (params?: { target?: string; libraryOptions?: Record<string, unknown> }) => Record<string, unknown>;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/** `convert` remembered per target; other options (none are used by the SDK) are passed through uncached. */
function remembered(convert: Convert): Convert {
  const byTarget = new Map<string | undefined, Record<string, unknown>>();
  return (params) => {
    if (params?.libraryOptions !== undefined) return convert(params);
    const target = params?.target;
    let json = byTarget.get(target);
    if (json === undefined) {
      json = deepFreeze(convert(params));
      byTarget.set(target, json);
    }
    return json;
  };
}

/** `schema` itself, its `~standard.jsonSchema` conversions remembered; validation is unchanged. */
export function frozenJsonSchema<T extends z.ZodType>(schema: T): T {
  const standard = schema['~standard'];
  const { jsonSchema } = standard;
  // zod defines a setter for `~standard` (an own property on the instance); validate stays zod's own.
  (schema as { '~standard': unknown })['~standard'] = {
    ...standard,
    jsonSchema: { input: remembered(jsonSchema.input as Convert), output: remembered(jsonSchema.output as Convert) },
  };
  return schema;
}
