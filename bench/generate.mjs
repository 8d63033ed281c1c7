/**
 * @module Deterministic skill folders for the benchmark. Same seed, same bytes: runs on different
 * days and machines measure the same work. The size mix follows public collections (docs/platform-notes.md §6):
 * mostly small markdown and Python, some JavaScript and JSON, some binary images and fonts, a few
 * 1 MiB files. One extra skill, `bench-probe`, holds what the harness reads by name: four 1 MiB
 * files, a 10 KB reference and a declared node script.
 *
 * Generated folders are cached under the OS temp dir, keyed by workload and generator version, so
 * repeated runs skip the writing (a `.complete` marker guards against a half-written folder).
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const GENERATOR_VERSION = 1;
const MIB = 1024 * 1024;

export const WORKLOADS = [
  { id: 'small', skills: 30, files: 450, largeFiles: 0 },
  { id: 'large', skills: 1000, files: 20_000, largeFiles: 6 },
  { id: 'huge', skills: 5000, files: 50_000, largeFiles: 10 },
];

/**
 * Beyond `npm run bench`: 20,000 skills for the cost curves (bench/curves.mjs), four times the
 * default `SKILL_MCP_MAX_SKILLS`, five files a skill. Same generator, same cache.
 */
export const GIANT = { id: 'giant', skills: 20_000, files: 100_000, largeFiles: 20 };

/** The skill the harness reads from, and what it reads. */
export const PROBE = {
  name: 'bench-probe',
  oneMiB: 'assets/large-0.bin',
  fourMiB: ['assets/large-0.bin', 'assets/large-1.bin', 'references/large-2.md', 'references/large-3.json'],
  tenKB: 'references/ten-kb.md',
  script: 'scripts/hello.js',
};

/** mulberry32: small, fast, good enough to pick sizes and names reproducibly. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'the skill reads files writes output checks input table chart report data model query parse format convert merge split test build deploy review commit branch image font document page section list item value error result config option'.split(' ');

function text(random, bytes) {
  const parts = [];
  let length = 0;
  while (length < bytes) {
    const line = Array.from({ length: 6 + Math.floor(random() * 10) }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
    parts.push(line);
    length += line.length + 1;
  }
  return parts.join('\n').slice(0, bytes);
}

function binary(random, bytes) {
  const out = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) out[i] = Math.floor(random() * 256);
  return out;
}

/** A small-file size: log-normal-ish mean ~1.7 KB, rarely up to ~18 KB. */
function smallSize(random) {
  return Math.max(40, Math.floor(Math.exp(6.2 + random() * 2.0 + (random() < 0.05 ? 1.6 : 0))));
}

const KINDS = [
  { weight: 40, dir: 'references', ext: 'md', binary: false },
  { weight: 25, dir: 'scripts', ext: 'py', binary: false },
  { weight: 10, dir: 'scripts', ext: 'js', binary: false },
  { weight: 8, dir: 'templates', ext: 'json', binary: false },
  { weight: 5, dir: 'references/api', ext: 'txt', binary: false },
  { weight: 8, dir: 'assets', ext: 'png', binary: true },
  { weight: 4, dir: 'assets/fonts', ext: 'ttf', binary: true },
];
const KIND_TOTAL = KINDS.reduce((sum, k) => sum + k.weight, 0);

function pickKind(random) {
  let roll = random() * KIND_TOTAL;
  for (const kind of KINDS) {
    roll -= kind.weight;
    if (roll < 0) return kind;
  }
  return KINDS[0];
}

function skillMd(name, random, extra = '') {
  const description = `${text(random, 80 + Math.floor(random() * 200)).replace(/\n/g, ' ')}.`;
  const body = text(random, 500 + Math.floor(random() * 3000));
  return `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\nlicense: MIT\n${extra}---\n\n# ${name}\n\n${body}\n`;
}

async function writeSkill(root, name, files) {
  const dirs = new Set(files.map(([path]) => path.split('/').slice(0, -1).join('/')).filter(Boolean));
  for (const dir of dirs) await mkdir(join(root, name, dir), { recursive: true });
  await mkdir(join(root, name), { recursive: true });
  await Promise.all(files.map(([path, bytes]) => writeFile(join(root, name, path), bytes)));
}

function probeSkill(random) {
  const declaration = 'mcp-host:\n  version: 1\n  run:\n    - script: scripts/hello.js\n      interpreter: node\n      timeout: 10\n';
  return [
    ['SKILL.md', skillMd(PROBE.name, random, declaration)],
    [PROBE.script, "process.stdout.write('ok\\n');\n"],
    [PROBE.tenKB, text(random, 10 * 1024)],
    [PROBE.fourMiB[0], binary(random, MIB)],
    [PROBE.fourMiB[1], binary(random, MIB)],
    [PROBE.fourMiB[2], text(random, MIB)],
    [PROBE.fourMiB[3], JSON.stringify({ rows: text(random, MIB - 20).split('\n') }).slice(0, MIB)],
  ];
}

/** Writes one workload (unless cached) and returns its root and what is in it. */
export async function generate(workload, seed = 2640) {
  const root = join(tmpdir(), `skill-mcp-bench-v${GENERATOR_VERSION}-${seed}`, workload.id, 'skills');
  const marker = join(root, '..', '.complete');
  const random = rng(seed + workload.skills);
  const regular = workload.skills - 1;
  // The probe holds 7 files; the rest are spread over the regular skills (each has its SKILL.md).
  const perSkill = (workload.files - 7) / regular;
  if (existsSync(marker)) return { root, cached: true };
  await rm(join(root, '..'), { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await writeSkill(root, PROBE.name, probeSkill(random));
  let largeLeft = workload.largeFiles;
  let filesLeft = workload.files - 7;
  let pairJitter = 0;
  for (let i = 0; i < regular; i++) {
    const name = `skill-${String(i).padStart(5, '0')}-${WORDS[i % WORDS.length]}`;
    // Pairs of skills share 2 × the mean (one above, one below), so the total stays on target.
    if (i % 2 === 0) pairJitter = random();
    const jitter = i % 2 === 0 ? pairJitter : 1 - pairJitter;
    const count = i === regular - 1 ? Math.max(1, filesLeft) : Math.max(1, Math.min(filesLeft - (regular - 1 - i), Math.round(perSkill * (0.5 + jitter))));
    filesLeft -= count;
    const files = [['SKILL.md', skillMd(name, random)]];
    for (let f = 1; f < count; f++) {
      const kind = pickKind(random);
      const large = largeLeft > 0 && random() < (workload.largeFiles * 4) / workload.files;
      if (large) largeLeft--;
      const size = large ? MIB : smallSize(random);
      files.push([`${kind.dir}/file-${f}.${kind.ext}`, kind.binary ? binary(random, size) : text(random, size)]);
    }
    await writeSkill(root, name, files);
  }
  await writeFile(marker, `${JSON.stringify(workload)}\n`);
  return { root, cached: false };
}
