/**
 * The six tools' declarations are built once per process and shared by every `McpServer` (one per
 * HTTP request), with each input schema's JSON Schema remembered (server/tools/schema-cache.ts).
 * Sharing must not change what a request is told or what it may send: the remembered JSON Schema
 * is the one zod gives, it cannot be altered by one request for the next, and validation (limits,
 * defaults, refusals) is still zod's own.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { toolDefinitions } from '../../server/tools/definitions.js';
import { frozenJsonSchema } from '../../server/tools/schema-cache.js';
import { MAX_LIST_LIMIT } from '../../server/tools/skill-list.js';

/** What the SDK asks of a schema before tools/list and tools/call (its conversion target). */
const TARGET = { target: 'draft-2020-12' } as const;
const twin = () =>
  z.object({
    name: z.string().describe('The skill name'),
    args: z.array(z.string()).default([]),
    limit: z.number().int().min(1).max(5).optional(),
  });

describe('a remembered JSON Schema', () => {
  it('is the JSON Schema zod itself gives for the same schema, for input and output', () => {
    const remembered = frozenJsonSchema(twin());
    const fresh = twin();
    expect(remembered['~standard'].jsonSchema.input(TARGET)).toEqual(fresh['~standard'].jsonSchema.input(TARGET));
    expect(remembered['~standard'].jsonSchema.output(TARGET)).toEqual(fresh['~standard'].jsonSchema.output(TARGET));
  });

  it('is computed once per target and handed out as the same object', () => {
    const schema = frozenJsonSchema(twin());
    const first = schema['~standard'].jsonSchema.input(TARGET);
    expect(schema['~standard'].jsonSchema.input(TARGET)).toBe(first);
    const other = schema['~standard'].jsonSchema.input({ target: 'draft-07' });
    expect(other).not.toBe(first);
    expect(other['$schema']).toContain('draft-07');
  });

  it('cannot be changed by one request for the next: the shared copy is frozen all the way down', () => {
    const schema = frozenJsonSchema(twin());
    const json = schema['~standard'].jsonSchema.input(TARGET) as { properties: Record<string, { description?: string }> };
    expect(() => {
      json.properties['name']!.description = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      (json as Record<string, unknown>)['additionalProperties'] = true;
    }).toThrow(TypeError);
    expect((schema['~standard'].jsonSchema.input(TARGET) as typeof json).properties['name']!.description).toBe('The skill name');
  });

  it('leaves validation to zod: defaults applied, limits and wrong types refused', async () => {
    const schema = frozenJsonSchema(twin());
    expect(schema.parse({ name: 'pdf' })).toEqual({ name: 'pdf', args: [] });
    expect(schema.safeParse({ name: 'pdf', limit: 6 }).success).toBe(false);
    expect(schema.safeParse({ name: 7 }).success).toBe(false);
    const standard = await schema['~standard'].validate({ name: 'pdf' });
    expect(standard).toEqual({ value: { name: 'pdf', args: [] } });
    const refused = await schema['~standard'].validate({ name: 'pdf', limit: 0 });
    expect('issues' in refused && refused.issues?.length).toBeTruthy();
  });
});

describe('the tool declarations', () => {
  it('name the configured run input budget in skill_run, and skill_list its page limit', () => {
    const tools = toolDefinitions({ runInputBytes: 12_345 });
    const run = tools.skill_run.inputSchema['~standard'].jsonSchema.input(TARGET) as {
      properties: Record<string, { description?: string }>;
    };
    expect(run.properties['files']?.description).toContain('12345 bytes');
    expect(tools.skill_list.inputSchema.safeParse({ limit: MAX_LIST_LIMIT + 1 }).success).toBe(false);
    expect(tools.skill_run.inputSchema.parse({ name: 'pdf', script: 'scripts/a.py' })).toEqual({
      name: 'pdf',
      script: 'scripts/a.py',
      args: [],
    });
  });
});
