/**
 * Which requests the HTTP fast path (server/http/fast-path.ts) takes: only the plain happy path of
 * a 2026-07-28 resources/read or skills/list; any doubt is the SDK handler's. The real answers of
 * both paths are compared in fast-path.test.ts; this pins the eligibility rules, by the trick each
 * one stops.
 */
import { describe, expect, test } from 'vitest';
import { fastRequest } from '../../server/http/fast-path.js';

const URI = 'skill://probe/notes.txt';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'unit', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

function readRequest(headers: Record<string, string> = {}, body: Record<string, unknown> = {}): [Headers, unknown] {
  return [
    new Headers({
      'content-type': 'application/json',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'resources/read',
      'mcp-name': URI,
      ...headers,
    }),
    { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: URI, _meta: META }, ...body },
  ];
}

describe('the fast path takes', () => {
  test('a plain resources/read', () => {
    expect(fastRequest(...readRequest())).toEqual({ id: 1, method: 'resources/read', uri: URI });
  });

  test('a plain skills/list, with or without a cursor, with a string id', () => {
    const headers = new Headers({ 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'skills/list' });
    expect(fastRequest(headers, { jsonrpc: '2.0', id: 'a', method: 'skills/list', params: { _meta: META } })).toEqual({
      id: 'a',
      method: 'skills/list',
      cursor: undefined,
    });
    expect(fastRequest(headers, { jsonrpc: '2.0', id: 2, method: 'skills/list', params: { cursor: 'c', _meta: META } })).toEqual({
      id: 2,
      method: 'skills/list',
      cursor: 'c',
    });
  });
});

describe('the fast path leaves to the SDK', () => {
  test.each<[string, Record<string, string>, Record<string, unknown>]>([
    ['header smuggling: a second Mcp-Method value', { 'mcp-method': 'resources/read, tools/call' }, {}],
    ['header smuggling: a second MCP-Protocol-Version value', { 'mcp-protocol-version': '2026-07-28, 2025-11-25' }, {}],
    ['a Mcp-Name naming another resource than the body', { 'mcp-name': 'skill://probe/SKILL.md' }, {}],
    ['a Mcp-Name base64 sentinel (the SDK decodes it first)', { 'mcp-name': `=?base64?${Buffer.from(URI).toString('base64')}?=` }, {}],
    ['a method the headers do not name', { 'mcp-method': 'skills/list' }, {}],
    ['a non-JSON content type', { 'content-type': 'text/plain' }, {}],
    ['an older protocol version', { 'mcp-protocol-version': '2025-11-25' }, {}],
    [
      'prototype pollution: a __proto__ params key',
      {},
      { params: JSON.parse(`{"uri":"${URI}","_meta":${JSON.stringify(META)},"__proto__":{"x":1}}`) },
    ],
    ['a progress token (the SDK would stream progress)', {}, { params: { uri: URI, _meta: { ...META, progressToken: 1 } } }],
    [
      'a log level (the SDK would stream log messages)',
      {},
      { params: { uri: URI, _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'debug' } } },
    ],
    ['a notification (no id)', {}, { id: undefined }],
    ['an id that is not a string or an integer', {}, { id: 1.5 }],
    ['an extra top-level member', {}, { extra: true }],
    [
      'an envelope the SDK refuses (clientCapabilities not an object)',
      {},
      { params: { uri: URI, _meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' } } },
    ],
    [
      'a body version other than the header',
      {},
      { params: { uri: URI, _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } } },
    ],
  ])('%s', (_what, headers, body) => {
    const [h, b] = readRequest(headers, body);
    expect(fastRequest(h, JSON.parse(JSON.stringify(b)) as unknown)).toBeUndefined();
  });

  test('a batch, a string, null', () => {
    const [headers, body] = readRequest();
    for (const other of [[body], 'resources/read', null, undefined]) expect(fastRequest(headers, other)).toBeUndefined();
  });
});
