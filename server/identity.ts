/**
 * @module Who this server is, as every client and registry sees it: the MCP `Implementation` of
 * `initialize` and `server/discover` (and of every 2026-07-28 result's `_meta`), kept here alone so
 * server.json and package.json can be checked against it (test/server-json.test.ts).
 */
import type { Implementation } from '@modelcontextprotocol/server';

/**
 * The icon, as a data: URI so it needs no web host: a page with lines on a dark square. Small on
 * purpose — the SDK stamps the whole identity on every 2026-07-28 result.
 */
export const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#1e293b"/><path d="M18 14h20l10 10v26H18z" fill="#f8fafc"/><path d="M38 14v10h10" fill="#cbd5e1"/><path d="M24 32h18M24 39h18M24 46h11" stroke="#1e293b" stroke-width="3" stroke-linecap="round"/></svg>';

export const SERVER_INFO = {
  name: 'skill-mcp',
  title: 'skill-mcp: Agent Skills over MCP',
  version: '0.1.0',
  description: 'Serve a folder of Agent Skills: catalog, reads, SEP-2640, confirmed sandboxed script runs.',
  websiteUrl: 'https://github.com/skill-mcp/skill-mcp',
  icons: [{ src: `data:image/svg+xml;base64,${Buffer.from(ICON_SVG).toString('base64')}`, mimeType: 'image/svg+xml', sizes: ['any'] }],
} as const satisfies Implementation;
