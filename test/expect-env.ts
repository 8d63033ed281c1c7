/**
 * @module CI's guard against a pass that silently tests less than it should. `.ci/run` sets
 * `SKILL_MCP_TEST_EXPECT` (comma-separated: `root`, `bwrap`) for each pass; when the machine does
 * not give what the pass is for, every test file fails at once instead of its tests skipping.
 */
import { bwrapWorks, isRoot } from './levels.js';

const expected = (process.env['SKILL_MCP_TEST_EXPECT'] ?? '').split(',').filter(Boolean);
const missing = expected.filter(
  (what) => (what === 'root' && !isRoot) || (what === 'bwrap' && !bwrapWorks) || !['root', 'bwrap'].includes(what),
);
if (missing.length > 0) {
  throw new Error(
    `SKILL_MCP_TEST_EXPECT=${expected.join(',')}: this pass needs ${missing.join(', ')}, which this machine does not give; the tests that need it would only skip`,
  );
}
