// Spawn → first skills/list answer, and resident memory right after it, for the bundled skills
// and the benchmark's 30-skill / ~450-file folder, in both eras (median of RUNS spawns).
// Prints numbers; never fails on speed. Run after `npm run build`: node bench/first-list.mjs
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WORKLOADS, generate } from './generate.mjs';

const RUNS = Number(process.env.RUNS ?? 7);
const SERVER = fileURLToPath(new URL('../dist/skill-mcp.js', import.meta.url));
const BUNDLED = fileURLToPath(new URL('../skills', import.meta.url));

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const ERAS = {
  // 2026-07-28: stateless, the very first request is skills/list.
  modern: [{ jsonrpc: '2.0', id: 1, method: 'skills/list', params: { _meta: MODERN_META } }],
  // 2025: initialize, initialized, then skills/list.
  legacy: [
    { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'first-list', version: '0' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 1, method: 'skills/list', params: {} },
  ],
};

function once(root, era) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [SERVER], { env: { PATH: process.env.PATH, SKILLS_DIR: root }, stdio: ['pipe', 'pipe', 'ignore'] });
    for (const message of ERAS[era]) child.stdin.write(`${JSON.stringify(message)}\n`);
    let buffer = '';
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const message = JSON.parse(line);
        if (message.id !== 1) continue;
        const ms = performance.now() - start;
        const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
        child.kill();
        if (!message.result) reject(new Error(JSON.stringify(message.error)));
        else resolve({ ms, rssKiB: rss, skills: message.result.skills.length, files: message.result.skills.reduce((n, s) => n + s.resources.length, 0) });
      }
    });
    child.on('error', reject);
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const small = WORKLOADS.find((w) => w.id === 'small');
const folders = { bundled: BUNDLED, [`generated ${small.id}`]: (await generate(small)).root };
for (const [label, root] of Object.entries(folders)) {
  for (const era of Object.keys(ERAS)) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await once(root, era));
    const { skills, files } = runs[0];
    console.log(`${label} (${skills} skills, ${files} files), ${era}: first skills/list ${median(runs.map((r) => r.ms)).toFixed(0)} ms median of ${RUNS} (min ${Math.min(...runs.map((r) => r.ms)).toFixed(0)}), RSS ${(median(runs.map((r) => r.rssKiB)) / 1024).toFixed(1)} MiB`);
  }
}
