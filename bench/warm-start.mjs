/**
 * @module `node bench/warm-start.mjs` (after `npm run build`; issue 31): spawn → a whole
 * `skills/list` walk with every digest, on a fresh server, without and with the digest index
 * (SKILL_MCP_DIGEST_INDEX, server/catalog/digest-index.ts). The index is primed by two starts (the
 * second is the one that finds the files settled), then cold starts alternate: one without, one
 * with. The file cache is warm for both (the bytes were read moments before). Load averages printed.
 *
 *   node bench/warm-start.mjs [--starts=N] [--only=large,huge]
 */
import { chownSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { WORKLOADS, generate } from './generate.mjs';
import { median } from './report.mjs';
import { Session } from './session.mjs';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const STARTS = Number(opt('starts') ?? 5);
const only = (opt('only') ?? 'large,huge').split(',');
/** Whom a front started as root becomes (SKILL_MCP_FRONT_UID's default): it owns its index. */
const FRONT_UID = 61183;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

async function startAndWalk(root, workload, env) {
  const session = await Session.open({ command: process.execPath, args: [BIN], env: { SKILLS_DIR: root, SKILL_MCP_MAX_SKILLS: String(workload.skills * 2), SKILL_MCP_WATCH: 'off', ...env } });
  try {
    const walk = await session.walkSkills();
    if (walk.undigested > 0 || walk.skills < workload.skills) throw new Error(`walk incomplete: ${JSON.stringify(walk).slice(0, 200)}`);
    const ms = performance.now() - session.startedAt;
    // Let the background pass finish and save the index before the server goes.
    if (env.SKILL_MCP_DIGEST_INDEX) await new Promise((r) => setTimeout(r, 300));
    return ms;
  } finally {
    await session.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-index-'));
if (process.getuid() === 0) chownSync(dir, FRONT_UID, FRONT_UID);
console.log(`${new Date().toISOString().slice(0, 16)} UTC, node ${process.version}, ${STARTS} cold starts each, alternating`);
console.log('| skills | load average (1/5/15 min), start → end | spawn → whole walk, no index | with the index | with / without | index file |');
console.log('|---:|---|---:|---:|---:|---:|');
try {
  for (const workload of WORKLOADS.filter((w) => only.includes(w.id))) {
    const { root } = await generate(workload);
    const index = join(dir, `${workload.id}.json`);
    const withIndex = { SKILL_MCP_DIGEST_INDEX: index };
    await startAndWalk(root, workload, withIndex);
    await startAndWalk(root, workload, withIndex); // settles every file
    const at = load();
    const samples = { without: [], with: [] };
    for (let i = 0; i < STARTS; i++) {
      samples.without.push(await startAndWalk(root, workload, {}));
      samples.with.push(await startAndWalk(root, workload, withIndex));
    }
    const a = median(samples.without);
    const b = median(samples.with);
    const size = statSync(index).size;
    console.log(`| ${workload.skills} | ${at} → ${load()} | ${a.toFixed(0)} ms | ${b.toFixed(0)} ms | ${(b / a).toFixed(2)} | ${(size / 1024 / 1024).toFixed(1)} MB |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
