/**
 * The MCP registry entry (`server.json`) agrees with the package it describes and with docs/configuration.md:
 * same name as package.json's `mcpName`, same version, the npm package by its own name over stdio,
 * and exactly the environment variables the configuration table documents.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { SERVER_INFO } from '../server/identity.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(`${REPO}${path}`, 'utf8');

interface ServerJson {
  $schema: string;
  name: string;
  title: string;
  description: string;
  websiteUrl: string;
  version: string;
  packages: {
    registryType: string;
    identifier: string;
    version: string;
    transport: { type: string };
    environmentVariables: { name: string; isSecret?: boolean }[];
  }[];
}

const server = JSON.parse(read('server.json')) as ServerJson;
const pkg = JSON.parse(read('package.json')) as { name: string; version: string; mcpName: string; homepage: string };

/** Variable names in the rows of docs/configuration.md's "## Variables" table. */
function readmeVariables(): string[] {
  const section = read('docs/configuration.md').split('\n## Variables\n')[1]!.split('\n## ')[0]!;
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return [...new Set(rows.flatMap((row) => [...row.matchAll(/`((?:MCP_|SKILL_MCP_)[A-Z0-9_]+|SKILLS_DIR)`/g)].map((m) => m[1]!)))].sort();
}

describe('server.json (MCP registry)', () => {
  test('names the npm package it describes, at its version, over stdio', () => {
    expect(server.$schema).toMatch(/^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/);
    expect(server.name).toBe(pkg.mcpName);
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.description.length).toBeLessThanOrEqual(100);
    expect(server.version).toBe(pkg.version);
    expect(server.packages).toHaveLength(1);
    expect(server.packages[0]).toMatchObject({
      registryType: 'npm',
      identifier: pkg.name,
      version: pkg.version,
      transport: { type: 'stdio' },
    });
  });

  test('says who the server is as the server itself does (server/identity.ts): title, description, website, version', () => {
    expect(server.title).toBe(SERVER_INFO.title);
    expect(server.description).toBe(SERVER_INFO.description);
    expect(server.websiteUrl).toBe(SERVER_INFO.websiteUrl);
    expect(pkg.homepage).toBe(SERVER_INFO.websiteUrl);
    expect(SERVER_INFO.version).toBe(pkg.version);
  });

  test('lists exactly the variables docs/configuration.md documents, the token secret marked secret', () => {
    const listed = server.packages[0]!.environmentVariables;
    expect(listed.map((v) => v.name).sort()).toEqual(readmeVariables());
    expect(listed.filter((v) => v.isSecret).map((v) => v.name)).toEqual(['MCP_CONFIRM_SECRET']);
  });
});
