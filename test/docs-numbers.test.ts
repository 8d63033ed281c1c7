/**
 * Numbers the docs state that the code defines (limits, defaults) are the code's: each doc figure
 * here is read from its doc and compared with the constant it describes, so a changed default fails
 * this test until its doc says the new one.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RUN_INPUT_BYTES, messageCapFor } from '../shared/run-io.js';
import { readHttpOptions } from '../server/http/options.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(`${REPO}${path}`, 'utf8');

/** The default column of a variable's row in a doc's table: `| \`NAME\` | \`value\` ...`. */
function tableDefault(doc: string, variable: string): string {
  const row = read(doc)
    .split('\n')
    .find((line) => line.startsWith(`| \`${variable}\``));
  if (!row) throw new Error(`${doc} has no table row for ${variable}`);
  return /^\| [^|]+\| `([^`]+)`/.exec(row)![1]!;
}

describe('numbers the docs take from the code', () => {
  it("docs/http.md: SKILL_MCP_HTTP_MAX_BODY_BYTES's default is the code's (room for a whole skill_run input as base64)", () => {
    const stated = Number(tableDefault('docs/http.md', 'SKILL_MCP_HTTP_MAX_BODY_BYTES'));
    expect(stated).toBe(messageCapFor(DEFAULT_RUN_INPUT_BYTES));
    expect(stated).toBe(readHttpOptions([], {}).maxBodyBytes);
    expect(stated).toBe(24_117_248);
  });
});
