/**
 * `node bench/helper-cost.mjs` (after `npm run build`): what a run's network helper costs
 * (docs/architecture.md §8, "The run's helper"). One server per build (`--bin=A,B`: say a build of
 * the runner from before the helper, then this one), each with three skills whose script is the same
 * python3 probe: `plain` (no egress), `net` (egress to 127.0.0.1:1, never contacted: the run gets a
 * helper — or, before it, an in-runner proxy — and nothing else) and `keyed` (the same with a secret
 * bound to that host: the helper makes the run's CA and writes its bundle). Rounds rotate the order
 * of builds and kinds; each sample is the run call with the token in hand (client → front → runner
 * → sandbox → back), its preview untimed. Prints medians per build and kind, and each build's
 * `net − plain` and `keyed − plain`, the median of the per-round differences.
 *
 *   node bench/helper-cost.mjs [--runs=N] [--bin=A[,B]] [--user] [--gap=MS]
 *
 * `--user`: the servers run as uid 40100 (setpriv), so the runner's level is `namespace`, the level
 * a person's desktop gets; otherwise as this process's uid (root: `namespace-uid`).
 * Numbers only: nothing here fails on speed.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const REPO = resolve(import.meta.dirname, '..');
const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const RUNS = Number(arg('runs') ?? 41);
const BINS = (arg('bin') ?? join(REPO, 'dist/skill-mcp.js')).split(',').map((b) => resolve(b));
const USER = process.argv.includes('--user') ? 40100 : undefined;
/** `--gap=MS`: an untimed pause before each timed run, as between a person's runs (spares ready); 0: back to back. */
const GAP_MS = Number(arg('gap') ?? 0);
const KINDS = ['plain', 'net', 'keyed'];

const PROBE = 'print("ok")\n';
function skill(name, extra) {
  return `---\nname: ${name}\ndescription: helper cost probe ${name}\nmcp-host:\n  version: 1\n  run:\n    - script: probe.py\n      interpreter: python3\n      timeout: 30\n${extra}---\nProbe.\n`;
}

function writeSkills(root) {
  const bodies = {
    plain: '',
    net: '  egress: ["127.0.0.1:1"]\n',
    keyed: '  egress: ["127.0.0.1:1"]\n  secrets:\n    - name: API_TOKEN\n      hosts: ["127.0.0.1:1"]\n',
  };
  for (const [name, extra] of Object.entries(bodies)) {
    mkdirSync(join(root, name), { recursive: true });
    writeFileSync(join(root, name, 'SKILL.md'), skill(name, extra));
    writeFileSync(join(root, name, 'probe.py'), PROBE);
  }
}

async function startServer(bin, skills) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-helper-'));
  chmodSync(home, 0o755);
  if (USER !== undefined) chownSync(home, USER, USER);
  const prefix = USER !== undefined ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [];
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const transport = new StdioClientTransport({
    command,
    args: prefix.length > 0 ? [...pre, process.execPath, bin] : [bin],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: home,
      SKILLS_DIR: skills,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_STATE_DIR: join(home, 'state'),
      SKILL_MCP_SECRET_API_TOKEN: 'bench-secret-value-0123456789',
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-helper-cost', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  const call = async (name, extra) =>
    (await client.callTool({ name: 'skill_run', arguments: { name, script: 'probe.py', args: [], ...extra } })).structuredContent;
  return {
    async time(name) {
      const first = await call(name, {});
      if (typeof first?.confirmToken !== 'string') throw new Error(`${name}: no token: ${JSON.stringify(first).slice(0, 300)}`);
      const t0 = performance.now();
      const second = await call(name, { confirmToken: first.confirmToken });
      const ms = performance.now() - t0;
      if (second?.exitCode !== 0) throw new Error(`${name}: run failed: ${JSON.stringify(second).slice(0, 400)}`);
      return { ms, level: first.preview.willRun.isolation };
    },
    /** The median of each `phases_ms` phase of this server's run.exit lines, by skill (the runner's own account). */
    phases() {
      const byKind = {};
      let text = '';
      try {
        text = readFileSync(join(home, 'state', 'audit.log'), 'utf8');
      } catch {
        return byKind;
      }
      const skillOf = new Map();
      for (const line of text.split('\n').filter(Boolean)) {
        const l = JSON.parse(line);
        if (l.event === 'run.accept') skillOf.set(l.run_id, l.skill);
        if (l.event !== 'run.exit' || !l.phases_ms) continue;
        const kind = skillOf.get(l.run_id) ?? '?';
        byKind[kind] ??= {};
        for (const [phase, ms] of Object.entries(l.phases_ms)) {
          byKind[kind][phase] ??= [];
          byKind[kind][phase].push(ms);
        }
      }
      return Object.fromEntries(
        Object.entries(byKind).map(([k, phases]) => [k, Object.fromEntries(Object.entries(phases).map(([p, xs]) => [p, median(xs)]))]),
      );
    },
    async close() {
      await client.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const skills = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-helper-skills-'));
chmodSync(skills, 0o755);
writeSkills(skills);
const servers = [];
for (const bin of BINS) servers.push(await startServer(bin, skills));
const samples = BINS.map(() => Object.fromEntries(KINDS.map((k) => [k, []])));
let level;
// Warm: each server's runner started, its first (slow) runs done, its spare helper up.
for (const s of servers) for (const k of KINDS) for (let i = 0; i < 3; i++) level = (await s.time(k)).level;
console.log(
  `level ${level}, ${RUNS} rounds, ${GAP_MS > 0 ? `${GAP_MS} ms before each run` : 'back to back'}, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (let round = 0; round < RUNS; round++) {
  const order = BINS.map((_, i) => (i + round) % BINS.length);
  for (const b of order) {
    const kinds = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length]);
    for (const k of kinds) {
      if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS));
      samples[b][k].push((await servers[b].time(k)).ms);
    }
  }
}
for (const [b, bin] of BINS.entries()) {
  const m = Object.fromEntries(KINDS.map((k) => [k, median(samples[b][k])]));
  const diff = (k) => median(samples[b][k].map((v, i) => v - samples[b].plain[i]));
  console.log(
    `${bin}: plain ${m.plain.toFixed(1)} ms, net ${m.net.toFixed(1)} ms, keyed ${m.keyed.toFixed(1)} ms; net − plain ${diff('net').toFixed(1)} ms, keyed − plain ${diff('keyed').toFixed(1)} ms`,
  );
}
if (BINS.length > 1)
  for (const k of KINDS) {
    const d = median(samples[1][k].map((v, i) => v - samples[0][k][i]));
    console.log(`${k}: build 2 − build 1 ${d.toFixed(1)} ms (median of the per-round differences)`);
  }
console.log(
  `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
// Where each build's time goes, by the runner's own phases (median ms of run.exit's phases_ms).
for (const [b, bin] of BINS.entries()) {
  for (const [k, phases] of Object.entries(servers[b].phases()))
    console.log(
      `${bin} ${k}: ${Object.entries(phases)
        .map(([p, ms]) => `${p} ${ms.toFixed(1)}`)
        .join(', ')}`,
    );
}
for (const s of servers) await s.close();
rmSync(skills, { recursive: true, force: true });
