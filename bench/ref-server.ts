/**
 * @module The reference point: a bare v2-SDK server serving one folder through the SDK's own
 * `loadSkills`, over stdio in both eras, bundled by esbuild like our bin. It is what a server
 * author gets for free; the harness prints our/ref ratios against it.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const root = process.env['SKILLS_DIR'];
if (!root) throw new Error('ref-server: set SKILLS_DIR');
const catalog = await loadSkills(root, { onWarning: () => undefined });
const handle = serveStdio(
  () => {
    const mcp = new McpServer({ name: 'ref-load-skills', version: '0.0.0' }, { capabilities: { resources: {} } });
    catalog.attach(mcp);
    return mcp;
  },
  { legacy: 'serve' },
);
process.stdin.once('end', () => void handle.close());
