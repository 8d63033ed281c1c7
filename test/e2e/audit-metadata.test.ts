/**
 * What a strict third-party MCP audit expects of a server's metadata, through the built bin: the
 * server's `title`, `websiteUrl`, `icons` and `description` in both eras; a `title` on every prompt,
 * resource and resource template, and a description on the template; and a 2026-07-28 request
 * naming a protocol version this server does not speak answered `-32022` with `supported` and
 * `requested` over stdio exactly as over HTTP — whatever the connection's first message pinned —
 * while the 2025 `initialize` handshake keeps negotiating.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_INFO } from '../../server/identity.js';
import { type HttpServer, startHttp } from '../http/harness.js';
import { BUNDLED_SKILLS, baseEnv, ERAS, expectNoLeftovers, SERVER_JS, serve } from './harness.js';

afterAll(expectNoLeftovers);

describe.each(ERAS)("the server's metadata ($name)", (era) => {
  it('title, websiteUrl, icons (an SVG as a data: URI) and description', async () => {
    const served = await serve({ SKILLS_DIR: BUNDLED_SKILLS }, era);
    try {
      const info = served.client.getServerVersion()!;
      expect(info).toMatchObject({
        name: 'skill-mcp',
        title: 'skill-mcp: Agent Skills over MCP',
        websiteUrl: 'https://github.com/skill-mcp/skill-mcp',
        description: expect.stringContaining('Agent Skills'),
      });
      const [icon] = info.icons!;
      expect(icon).toMatchObject({ mimeType: 'image/svg+xml', sizes: ['any'] });
      const svg = Buffer.from(icon!.src.replace(/^data:image\/svg\+xml;base64,/, ''), 'base64').toString('utf8');
      expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 64 64">.*<\/svg>$/);
    } finally {
      await served.close();
    }
  });

  it('a title on every prompt and resource, and a title and description on the resource template', async () => {
    const served = await serve({ SKILLS_DIR: BUNDLED_SKILLS }, era);
    try {
      const { prompts } = await served.client.listPrompts();
      expect(prompts.length).toBeGreaterThan(0);
      for (const p of prompts) expect(p.title, p.name).toMatch(/\S/);
      // commit-message's SKILL.md opens with its heading: that is its title.
      expect(prompts.find((p) => p.name === 'commit-message')?.title).toBe('Commit messages');
      const { resources } = await served.client.listResources();
      expect(resources.length).toBeGreaterThan(0);
      for (const r of resources) expect(r.title, r.uri).toMatch(/\S/);
      const { resourceTemplates } = await served.client.listResourceTemplates();
      expect(resourceTemplates).toEqual([
        expect.objectContaining({
          name: 'io.modelcontextprotocol/skills',
          uriTemplate: 'skill://{+path}',
          title: 'Agent Skill files',
          description: expect.stringContaining('skill://<name>/<path>'),
        }),
      ]);
      const listing = await served.skills.readDirectory('skill://commit-message');
      expect(listing.resources.length).toBeGreaterThan(1);
      for (const r of listing.resources) expect(r.title, r.uri).toMatch(/^commit-message: /);
    } finally {
      await served.close();
    }
  });
});

/** A 2026-07-28 request whose envelope names `version`. */
function modern(id: number, method: string, version: string): Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': version,
        'io.modelcontextprotocol/clientInfo': { name: 'audit', version: '0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
}
const INITIALIZE = (id: number, version: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'audit', version: '0' } },
});

/** The whole stdio session at once (stdin closed after it), its answers by id. */
async function stdioSession(messages: Record<string, unknown>[]): Promise<Map<unknown, Record<string, unknown>>> {
  const child = spawn(process.execPath, [SERVER_JS], {
    env: { ...baseEnv(), SKILLS_DIR: BUNDLED_SKILLS },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stdin.end(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
  await new Promise((resolve) => child.once('close', resolve));
  const answers = out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return new Map(answers.map((a) => [a['id'], a]));
}

describe('a protocol version the server does not speak, over stdio as over HTTP', () => {
  let http: HttpServer;
  /** The HTTP front's answer to the same request (its error object). */
  let httpError: (version: string) => Promise<unknown>;
  beforeAll(async () => {
    http = await startHttp({ SKILLS_DIR: BUNDLED_SKILLS });
    httpError = async (version) => {
      const response = await fetch(http.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': version,
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify(modern(1, 'tools/list', version)),
      });
      return ((await response.json()) as { error: unknown }).error;
    };
  });
  afterAll(async () => {
    await http?.stop();
  });

  it('-32022 with supported and requested, identical to HTTP: as the first message, after a 2026-07-28 request, and after a 2025 initialize', async () => {
    const expected = await httpError('2099-01-01');
    expect(expected).toEqual({
      code: -32022,
      message: 'Unsupported protocol version: 2099-01-01',
      data: { supported: ['2026-07-28'], requested: '2099-01-01' },
    });
    const first = await stdioSession([modern(1, 'tools/list', '2099-01-01')]);
    expect(first.get(1)?.['error']).toEqual(expected);
    // Pinned to 2026-07-28 by its first request: a later one naming another version is still refused.
    const afterModern = await stdioSession([modern(1, 'tools/list', '2026-07-28'), modern(2, 'tools/list', '2099-01-01')]);
    expect(afterModern.get(1)?.['result']).toBeDefined();
    expect(afterModern.get(2)?.['error']).toEqual(expected);
    // A 2025 session, then a request carrying the 2026 envelope with an unknown version: refused the same way.
    const afterLegacy = await stdioSession([
      INITIALIZE(1, '2025-11-25'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      modern(2, 'tools/list', '2099-01-01'),
    ]);
    expect(afterLegacy.get(1)?.['result']).toMatchObject({ protocolVersion: '2025-11-25' });
    expect(afterLegacy.get(2)?.['error']).toEqual(expected);
  });

  it('the 2025 initialize handshake keeps negotiating: an unknown protocolVersion there gets the server’s latest 2025 version, not -32022', async () => {
    const answers = await stdioSession([INITIALIZE(1, '2099-01-01')]);
    expect(answers.get(1)?.['error']).toBeUndefined();
    expect(answers.get(1)?.['result']).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { title: SERVER_INFO.title } });
  });
});
