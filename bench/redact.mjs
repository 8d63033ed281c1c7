/**
 * @module `node bench/redact.mjs`: the redactor's throughput (runner/secrets/redact.ts). Bundles it
 * from the TypeScript sources with esbuild into the OS temp dir, then streams 64 MiB (64 KiB chunks,
 * as a pipe gives them) through a run's redactor with 5 values of 32 bytes, interleaved sample by
 * sample with sha256 over the same chunks (what the runner already spent per captured byte), on two
 * inputs: random bytes, base64 text (every byte in the spellings' alphabet, the redactor's worst
 * ordinary case), and the same wrapped at 76 columns (a line break to search across on every line). Then the cost on a typical run's path: a redaction made for one value, 4 KiB of
 * stdout, 1 KiB of stderr, one 16 KiB file and two file names. Numbers only; never fails on speed.
 *
 *   node bench/redact.mjs [--mb=64] [--samples=5] [--values=5]
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt);
const MB = arg('mb', 64);
const SAMPLES = arg('samples', 5);
const VALUES = arg('values', 5);
const CHUNK = 64 * 1024;

const out = mkdtempSync(join(tmpdir(), 'skill-mcp-redact-bench-'));
try {
  await build({
    stdin: { contents: "export { RunRedaction } from './runner/secrets/redact.ts';", resolveDir: REPO, loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: join(out, 'redact.mjs'),
    logLevel: 'error',
  });
  const { RunRedaction } = await import(pathToFileURL(join(out, 'redact.mjs')).href);
  const values = Array.from({ length: VALUES }, (_, i) => ({ name: `SECRET_${i}`, value: randomBytes(24).toString('base64') }));
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  const inputs = {
    'random bytes': Array.from({ length: (MB * 1024 * 1024) / CHUNK }, () => randomBytes(CHUNK)),
    'base64 text': Array.from({ length: (MB * 1024 * 1024) / CHUNK }, () => Buffer.from(randomBytes((CHUNK * 3) / 4).toString('base64'))),
    // MIME's 76 columns: a line break every 77 bytes, each one a joint the redactor searches across.
    'base64 lines': Array.from({ length: (MB * 1024 * 1024) / CHUNK }, () =>
      Buffer.from(
        randomBytes((CHUNK * 3) / 4)
          .toString('base64')
          .replace(/.{76}/g, '$&\n')
          .slice(0, CHUNK),
      ),
    ),
  };
  // A few real occurrences in each, so the matching path is exercised (not only the search).
  for (const chunks of Object.values(inputs))
    for (let i = 0; i < chunks.length; i += 97) Buffer.from(values[i % VALUES].value).copy(chunks[i], 100);

  const redactAll = (chunks) => {
    const redaction = new RunRedaction(values);
    const r = redaction.stream();
    let bytes = 0;
    for (const c of chunks) for (const piece of r.push(c)) bytes += piece.length;
    for (const piece of r.end(false)) bytes += piece.length;
    return { bytes, count: redaction.summary().count };
  };
  const hashAll = (chunks) => {
    const h = createHash('sha256');
    for (const c of chunks) h.update(c);
    return h.digest('hex');
  };

  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${MB} MiB in ${CHUNK / 1024} KiB chunks; ${VALUES} values of 32 characters; median of ${SAMPLES}`,
  );
  const results = {};
  for (const [name, chunks] of Object.entries(inputs)) {
    const red = [];
    const sha = [];
    let count = 0;
    for (let s = 0; s < SAMPLES; s++) {
      let t = process.hrtime.bigint();
      count = redactAll(chunks).count;
      red.push(Number(process.hrtime.bigint() - t) / 1e9);
      t = process.hrtime.bigint();
      hashAll(chunks);
      sha.push(Number(process.hrtime.bigint() - t) / 1e9);
    }
    const mbps = MB / median(red);
    const shaMbps = MB / median(sha);
    results[name] = { mbps, shaMbps };
    console.log(
      `  ${name.padEnd(13)} redactor ${mbps.toFixed(0).padStart(5)} MiB/s   sha256 ${shaMbps.toFixed(0).padStart(5)} MiB/s   redactor/sha256 time ${(median(red) / median(sha)).toFixed(2)}x   (${count} occurrences replaced)`,
    );
  }

  // A typical run's path: made once per run, a few KiB through it.
  const stdout = Buffer.from(`${'result line with some numbers 12345\n'.repeat(110)}`);
  const stderr = Buffer.from('warning: something\n'.repeat(50));
  const file = Buffer.from(randomBytes(12 * 1024).toString('base64'));
  const typical = () => {
    const redaction = new RunRedaction([values[0]]);
    for (const stream of [stdout, stderr, file]) {
      const r = redaction.stream();
      r.push(stream);
      r.end(false);
    }
    redaction.text('out/result.json');
    redaction.text('out/chart.png');
    return redaction.summary();
  };
  for (let i = 0; i < 200; i++) typical();
  const times = [];
  for (let i = 0; i < 2000; i++) {
    const t = process.hrtime.bigint();
    typical();
    times.push(Number(process.hrtime.bigint() - t) / 1e3);
  }
  console.log(
    `  typical run (1 value; 4 KiB stdout, 1 KiB stderr, a 16 KiB file, 2 names): median ${median(times).toFixed(1)} µs per run (of 2000, warm)`,
  );
} finally {
  rmSync(out, { recursive: true, force: true });
}
