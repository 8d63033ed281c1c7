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
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
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

const WORDS =
  'the skill reads files writes output checks input table chart report data model query parse format convert merge split test build deploy review commit branch image font document page section list item value error result config option'.split(
    ' ',
  );

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

function skillMd(name, random, extra = '', bodyBytes = 500 + Math.floor(random() * 3000)) {
  const description = `${text(random, 80 + Math.floor(random() * 200)).replace(/\n/g, ' ')}.`;
  const body = text(random, bodyBytes);
  return `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\nlicense: MIT\n${extra}---\n\n# ${name}\n\n${body}\n`;
}

/** A long SKILL.md as published: sections under headings, some code blocks, about `bytes` long. */
function longSkillMd(name, random, bytes) {
  const parts = [skillMd(name, random, '', 300)];
  let length = parts[0].length;
  for (let s = 1; length < bytes; s++) {
    const section = `\n## ${WORDS[s % WORDS.length]} ${s}\n\n${text(random, 300 + Math.floor(random() * 1500))}\n${s % 3 === 0 ? `\n\`\`\`python\n${text(random, 200)}\n\`\`\`\n` : ''}`;
    parts.push(section);
    length += section.length;
  }
  return parts.join('');
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
    const count =
      i === regular - 1
        ? Math.max(1, filesLeft)
        : Math.max(1, Math.min(filesLeft - (regular - 1 - i), Math.round(perSkill * (0.5 + jitter))));
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

/**
 * A collection shaped like the published ones (issue 31 item 4: "553 skills, 74 MB"): mostly
 * plain skills (a SKILL.md of a few KB, a reference or two, the same LICENSE.txt byte for byte in
 * many), a third with Python scripts and references, a few document skills carrying dozens of XML
 * schemas and binary templates, and a few asset skills with fonts, images and PDFs that hold most
 * of the bytes. Some SKILL.md files are over 70 KB, some files use CRLF, scripts are executable.
 * Its own seed and cache folder; every skill is publishable, so a whole walk lists all 553.
 */
export const COLLECTION = { id: 'collection', skills: 553, bytes: 74 * MIB, shape: 'collection' };

const COLLECTION_VERSION = 2;
const NAME_WORDS =
  'pdf docx pptx xlsx canvas design brand guide web app test slack gif theme algorithmic art internal comms mcp builder skill creator artifacts frontend review writer data chart api docs git commit lint deploy cloud sql query notebook latex resume email meeting notes figma video audio image'.split(
    ' ',
  );

/** [path, bytes, kind] of one skill before the large binaries are scaled. */
function planCollectionSkill(random, index) {
  const roll = random();
  const kind = roll < 0.55 ? 'plain' : roll < 0.88 ? 'scripted' : roll < 0.9 ? 'document' : 'assets';
  const files = [];
  const some = (min, max) => min + Math.floor(random() * (max - min + 1));
  const mdSize = random() < 0.05 ? some(40_000, 90_000) : some(1_500, 15_000);
  files.push(['SKILL.md', mdSize, 'md']);
  if (random() < 0.45) files.push(['LICENSE.txt', 0, 'license']);
  const refs = kind === 'plain' ? some(0, 2) : some(1, 5);
  for (let r = 0; r < refs; r++)
    files.push([`references/${NAME_WORDS[some(0, NAME_WORDS.length - 1)]}-${r}.md`, some(2_000, 20_000), 'md']);
  if (kind !== 'plain') {
    for (let s = 0, n = some(2, 8); s < n; s++)
      files.push([`scripts/${NAME_WORDS[some(0, NAME_WORDS.length - 1)]}_${s}.py`, some(1_000, 15_000), 'script']);
    if (random() < 0.3) files.push(['requirements.txt', some(40, 300), 'text']);
    for (let t = 0, n = some(0, 2); t < n; t++) files.push([`templates/template-${t}.json`, some(500, 6_000), 'text']);
  }
  if (kind === 'document') {
    for (let x = 0, n = some(25, 40); x < n; x++) files.push([`ooxml/schemas/part-${x}.xsd`, some(2_000, 80_000), 'text']);
    for (let t = 0, n = some(1, 3); t < n; t++) files.push([`templates/blank-${t}.bin`, some(20_000, 300_000), 'large']);
  }
  if (kind === 'assets') {
    for (let f = 0, n = some(2, 14); f < n; f++) files.push([`assets/fonts/font-${f}.ttf`, some(30_000, 700_000), 'large']);
    for (let p = 0, n = some(1, 6); p < n; p++) files.push([`assets/image-${p}.png`, some(20_000, 1_500_000), 'large']);
    if (random() < 0.5) files.push([`examples/sample-${index}.pdf`, some(100_000, 3_000_000), 'large']);
  }
  const a = NAME_WORDS[index % NAME_WORDS.length];
  const b = NAME_WORDS[Math.floor(index / NAME_WORDS.length) % NAME_WORDS.length];
  return { name: `${a}-${b}-${String(index).padStart(3, '0')}`, files };
}

/** Writes the collection (unless cached) and returns its root, file count and bytes. */
export async function generateCollection(workload = COLLECTION, seed = 31) {
  const root = join(tmpdir(), `skill-mcp-bench-collection-v${COLLECTION_VERSION}-${seed}`, 'skills');
  const marker = join(root, '..', '.complete');
  if (existsSync(marker)) return { root, cached: true, ...JSON.parse(await readFile(marker, 'utf8')) };
  const random = rng(seed);
  const license = text(random, 11_357);
  const plans = Array.from({ length: workload.skills }, (_, i) => planCollectionSkill(random, i));
  // The fonts, images, PDFs and templates are scaled (each at most 7 MiB) so the total is the target.
  const sizeOf = ([, bytes, kind]) => (kind === 'license' ? license.length : bytes);
  const all = plans.flatMap((p) => p.files);
  const fixed = all.filter((f) => f[2] !== 'large').reduce((sum, f) => sum + sizeOf(f), 0);
  const large = all.filter((f) => f[2] === 'large').reduce((sum, f) => sum + f[1], 0);
  const scale = (workload.bytes - fixed) / large;
  await rm(join(root, '..'), { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  let files = 0;
  let bytes = 0;
  for (const plan of plans) {
    const contents = plan.files.map(([path, size, kind]) => {
      if (kind === 'license') return [path, license];
      if (kind === 'large') return [path, binary(random, Math.min(7 * MIB, Math.max(1, Math.round(size * scale))))];
      if (kind === 'md' && path === 'SKILL.md') return [path, longSkillMd(plan.name, random, size)];
      const body = text(random, size);
      // A few files as published on Windows.
      return [path, random() < 0.1 ? body.replace(/\n/g, '\r\n') : body];
    });
    await writeSkill(root, plan.name, contents);
    for (const [path, body] of contents) {
      if (path.endsWith('.py')) await chmod(join(root, plan.name, path), 0o755);
      files++;
      bytes += Buffer.byteLength(body);
    }
  }
  const summary = { skills: plans.length, files, bytes };
  await writeFile(marker, `${JSON.stringify(summary)}\n`);
  return { root, cached: false, ...summary };
}
