/**
 * Numbers the docs state that the code defines (limits, defaults) are the code's: each doc figure
 * here is read from its doc and compared with the constant it describes, so a changed default fails
 * this test until its doc says the new one.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FRONT_UID } from '../cli/standalone.js';
import { RUNNER_VARIABLES } from '../runner/options.js';
import { DEFAULT_UID_RANGE } from '../runner/uids/pool.js';
import { DEFAULT_WORKSPACE_BYTES, DEFAULT_WORKSPACE_FILES, MAX_WORKSPACE_FILES } from '../runner/workspace/capacity.js';
import { DEFAULT_POLL_SECONDS } from '../server/catalog/live.js';
import { readHttpOptions } from '../server/http/options.js';
import { PAGE_SIZE } from '../server/start.js';
import { DEFAULT_CATALOG_LIMITS, DEFAULT_RUN_QUEUE_MS, MAX_RUN_QUEUE_MS } from '../shared/limits.js';
import {
  DEFAULT_RUN_INPUT_BYTES,
  DEFAULT_RUN_OUTPUT_FILES_BYTES,
  MAX_RUN_INPUT_BYTES,
  MAX_RUN_OUTPUT_FILES_BYTES,
  messageCapFor,
} from '../shared/run-io.js';
import { MAX_RULES_PER_ENTRY } from '../shared/egress-rules.js';
import { CONFIRM_TTL, MAX_CONFIRM_TTL_SECONDS } from '../shared/settings.js';
import { ROOT_STATE_DIR } from '../shared/state-dir.js';
import { compilePrograms } from '../runner/sandbox/seccomp-compile.js';
import { MAX_INSNS } from '../runner/sandbox/seccomp-programs.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(`${REPO}${path}`, 'utf8');
const MiB = 1024 * 1024;
/** A byte count as the docs write it: `16 MiB` when whole MiB, else the number. */
const bytes = (n: number): string => (n % MiB === 0 ? `${n / MiB} MiB` : String(n));

/** The table row of a doc that starts with `variable`. */
function row(doc: string, variable: string): string {
  const found = read(doc)
    .split('\n')
    .find((line) => line.startsWith(`| \`${variable}\``));
  if (!found) throw new Error(`${doc} has no table row for ${variable}`);
  return found;
}

/** The default column of a variable's row in a three-column table: `| \`NAME\` | \`value\` ...`. */
function tableDefault(doc: string, variable: string): string {
  return /^\| [^|]+\| `([^`]+)`/.exec(row(doc, variable))![1]!;
}

describe('numbers the docs take from the code', () => {
  it("docs/http.md: SKILL_MCP_HTTP_MAX_BODY_BYTES's default is the code's (room for a whole skill_run input as base64)", () => {
    const stated = Number(tableDefault('docs/http.md', 'SKILL_MCP_HTTP_MAX_BODY_BYTES'));
    expect(stated).toBe(messageCapFor(DEFAULT_RUN_INPUT_BYTES));
    expect(stated).toBe(readHttpOptions([], {}).maxBodyBytes);
    expect(stated).toBe(24_117_248);
  });

  it('docs/tools.md: the stdio line cap is the same figure', () => {
    const stdio = read('docs/tools.md');
    expect(stdio).toContain(
      `A message is at most **${bytes(messageCapFor(DEFAULT_RUN_INPUT_BYTES))}** (${messageCapFor(DEFAULT_RUN_INPUT_BYTES)} bytes)`,
    );
  });

  it("docs/configuration.md: every default and bound its table states is the code's", () => {
    const doc = 'docs/configuration.md';
    const says = (variable: string, ...texts: string[]): void => {
      for (const text of texts) expect(row(doc, variable), variable).toContain(text);
    };
    says('MCP_CONFIRM_TTL_SECONDS', `1 to ${MAX_CONFIRM_TTL_SECONDS}`, `default ${CONFIRM_TTL.fallback}`);
    says('SKILL_MCP_MAX_SKILLS', `default ${DEFAULT_CATALOG_LIMITS.maxSkills}`);
    says('SKILL_MCP_MAX_FILES', `default ${DEFAULT_CATALOG_LIMITS.maxFilesPerSkill}`);
    says('SKILL_MCP_MAX_DIRS', `default ${DEFAULT_CATALOG_LIMITS.maxDirsPerSkill}`);
    says('SKILL_MCP_MAX_FRONTMATTER_BYTES', `default ${DEFAULT_CATALOG_LIMITS.maxFrontmatterBytes}`);
    says('SKILL_MCP_WATCH_POLL_SECONDS', `default ${DEFAULT_POLL_SECONDS}`);
    says('SKILL_MCP_PAGE_SIZE', `default ${PAGE_SIZE.fallback}`);
    says('SKILL_MCP_STATE_DIR', `default \`${ROOT_STATE_DIR}\` as root`);
    says('SKILL_MCP_FRONT_UID', `default ${DEFAULT_FRONT_UID}`);
    says('SKILL_MCP_UID_RANGE', `default \`${DEFAULT_UID_RANGE}\``);
    says(
      'SKILL_MCP_RUN_NPROC',
      `defaults ${RUNNER_VARIABLES.nproc.fallback}, ${bytes(RUNNER_VARIABLES.fsizeBytes.fallback)}, ${RUNNER_VARIABLES.nofile.fallback}`,
    );
    says('SKILL_MCP_RUN_INPUT_BYTES', `default ${bytes(DEFAULT_RUN_INPUT_BYTES)}, at most ${bytes(MAX_RUN_INPUT_BYTES)}`);
    says(
      'SKILL_MCP_RUN_OUTPUT_FILES_BYTES',
      `default ${bytes(DEFAULT_RUN_OUTPUT_FILES_BYTES)}, at most ${bytes(MAX_RUN_OUTPUT_FILES_BYTES)}`,
    );
    says(
      'SKILL_MCP_RUN_WORKSPACE_BYTES',
      `default ${bytes(DEFAULT_WORKSPACE_BYTES)}`,
      `default ${DEFAULT_WORKSPACE_FILES}, at most ${MAX_WORKSPACE_FILES}`,
    );
    says('SKILL_MCP_KILL_GRACE_MS', `(${RUNNER_VARIABLES.killGraceMs.fallback})`, `(${RUNNER_VARIABLES.drainMs.fallback})`);
    says('SKILL_MCP_RUN_QUEUE_MS', `default ${DEFAULT_RUN_QUEUE_MS}, at most ${MAX_RUN_QUEUE_MS}`);
  });

  it("docs/egress-rules.md and docs/skills.md: the most request rules a host may have is the code's", () => {
    expect(read('docs/egress-rules.md')).toContain(`At most ${MAX_RULES_PER_ENTRY} rules an entry.`);
    expect(read('docs/skills.md')).toContain(`at most\n${MAX_RULES_PER_ENTRY} rules a host`);
  });

  it("docs/isolation.md: the syscall filter programs' sizes are the compiled programs', and the loader's bound the kernel's", () => {
    const insns = (arch: string, memoryCounted: boolean): number =>
      compilePrograms().find((p) => p.arch === arch && p.memoryCounted === memoryCounted)!.bytes.length / 8;
    const doc = read('docs/isolation.md').replace(/\s+/g, ' ');
    expect(doc).toContain(
      `(${insns('x86_64', true)} instructions on x86_64, ${insns('aarch64', true)} on aarch64; ${insns('x86_64', false)} and ${insns('aarch64', false)} in the variant that refuses System V shm)`,
    );
    expect(doc).toContain(`read to at most ${MAX_INSNS} instructions (the kernel's \`BPF_MAXINSNS\`)`);
  });
});
