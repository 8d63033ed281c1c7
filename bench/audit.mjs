/**
 * `node bench/audit.mjs [--gb]` (after `node build.mjs`): how fast `skill-mcp audit verify` checks a
 * log and how much memory `audit verify` and `audit query` need on a big one. A synthetic log is
 * written to a temp folder — run lines of realistic size, hash-chained, with a signed checkpoint
 * every 1,000 lines, cut into segments of 64 MiB like a rotating runner would — then the real bin
 * verifies it with the public key and runs a query over it that matches a few lines; wall clock
 * and peak RSS (`/usr/bin/time`) of each. Default 200 MB; `--gb` (or BENCH_AUDIT_MB=1024) for 1 GB.
 * Not a test: nothing fails on speed; the figures go to stdout and bench/out/audit.json.
 */
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist', 'skill-mcp.js');
const MB = Number(process.env.BENCH_AUDIT_MB ?? (process.argv.includes('--gb') ? 1024 : 200));
const SEGMENT_BYTES = 64 * 1024 * 1024;

const hash = (s) => createHash('sha256').update(s).digest('hex');
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const keyId = createHash('sha256')
  .update(publicKey.export({ type: 'spki', format: 'der' }))
  .digest('hex')
  .slice(0, 16);

function generate(dir) {
  const path = join(dir, 'audit.log');
  let fd = openSync(path, 'w');
  let seq = 0;
  let prev = '0'.repeat(64);
  let segmentBytes = 0;
  let total = 0;
  let firstOfSegment = 1;
  let buf = [];
  const flush = () => {
    const text = buf.join('');
    writeSync(fd, text);
    buf = [];
  };
  const line = (fields, ts = new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString()) => {
    seq += 1;
    const text = JSON.stringify({ seq, ts, prev, ...fields });
    prev = hash(text);
    buf.push(`${text}\n`);
    segmentBytes += text.length + 1;
    total += text.length + 1;
    if (buf.length >= 2000) flush();
    return ts;
  };
  const checkpoint = () => {
    const ts = new Date(Date.UTC(2026, 0, 1) + (seq + 1) * 1000).toISOString();
    const statement = `skill-mcp audit head v1\nseq ${seq}\nsha256 ${prev}\nts ${ts}\nkey ${keyId}\n`;
    line(
      {
        event: 'audit.checkpoint',
        head_seq: seq,
        head_sha256: prev,
        key_id: keyId,
        sig: sign(null, Buffer.from(statement), privateKey).toString('base64'),
      },
      ts,
    );
  };
  line({ event: 'runner.start', pid: 1 });
  for (let run = 0; total < MB * 1024 * 1024; run++) {
    const runId = run.toString(16).padStart(16, '0');
    const skill = `skill-${run % 97}`;
    line({
      event: 'run.prepare',
      skill,
      script: 'scripts/main.py',
      token_id: runId.slice(0, 12),
      will_run_sha256: hash(runId),
      requester: 'alice',
      requester_from: 'os-user',
    });
    line({
      event: 'run.accept',
      run_id: runId,
      runner_pid: 1,
      token_id: runId.slice(0, 12),
      skill,
      script: 'scripts/main.py',
      interpreter: 'python3',
      argv: ['scripts/main.py', '--input', `file-${run}.csv`],
      env_names: ['API_KEY', 'HOME', 'PATH'],
      timeout_ms: 60000,
      isolation: 'namespace-uid',
      sandbox: ['bubblewrap', 'uid'],
      memory_bytes: 1073741824,
      uid: 61184,
      script_sha256: hash(`s${run}`),
      files_sha256: hash(`f${run}`),
      client: 'c'.repeat(32),
      requester: 'alice',
      requester_from: 'os-user',
      approval: { channel: 'token' },
      grant: { from: 'declaration' },
    });
    line({ event: 'egress', run_id: runId, destination: 'api.example.com:443', decision: 'allowed', bytes_up: 512, bytes_down: 4096 });
    line({
      event: 'run.exit',
      run_id: runId,
      exit_code: run % 13 === 0 ? 1 : 0,
      signal: null,
      ended: 'exit',
      duration_ms: 120,
      stdout_bytes: 10,
      stderr_bytes: 0,
      stdout_sha256: hash(`o${run}`),
      stderr_sha256: hash(''),
      truncated: false,
    });
    if (run % 250 === 249) checkpoint();
    if (segmentBytes > SEGMENT_BYTES) {
      checkpoint();
      flush();
      closeSync(fd);
      renameSync(path, `${path}.${String(firstOfSegment).padStart(12, '0')}`);
      fd = openSync(path, 'w');
      const previous = `audit.log.${String(firstOfSegment).padStart(12, '0')}`;
      firstOfSegment = seq + 1;
      segmentBytes = 0;
      line({ event: 'audit.segment', previous, previous_seq: seq, previous_sha256: prev });
    }
  }
  checkpoint();
  flush();
  closeSync(fd);
  return { path, lines: seq, bytes: total };
}

/** Wall clock, CPU seconds (user + system: what the run costs whatever else the machine does) and peak RSS. */
function timed(args, dir) {
  const started = process.hrtime.bigint();
  const out = join(dir, 'out.txt');
  const report = execFileSync(
    '/bin/sh',
    ['-c', `/usr/bin/time -f 'TIME %U %S %M' "$@" 2>&1 >"${out}"`, 'sh', process.execPath, BIN, ...args],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const [, user, sys, rss] = /TIME ([\d.]+) ([\d.]+) (\d+)/.exec(report) ?? [];
  return { seconds, cpu: Number(user) + Number(sys), rssKb: Number(rss), stdout: readFileSync(out, 'utf8').slice(0, 4096) };
}

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-audit-'));
try {
  const t0 = process.hrtime.bigint();
  const log = generate(dir);
  const genSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const pem = join(dir, 'audit.pub');
  writeFileSync(pem, publicKey.export({ type: 'spki', format: 'pem' }));
  const verify = timed(['audit', 'verify', log.path, '--public-key', pem], dir);
  if (!/^intact: /.test(verify.stdout)) throw new Error(`verify did not pass: ${verify.stdout}`);
  const query = timed(['audit', 'query', log.path, '--skill', 'skill-5', '--outcome', 'failed', '--json'], dir);
  const mb = log.bytes / (1024 * 1024);
  const result = {
    log_mb: Math.round(mb),
    lines: log.lines,
    generate_s: +genSeconds.toFixed(1),
    verify_s: +verify.seconds.toFixed(2),
    verify_mb_per_s: Math.round(mb / verify.seconds),
    verify_mb_per_cpu_s: Math.round(mb / verify.cpu),
    verify_peak_rss_mb: Math.round(verify.rssKb / 1024),
    query_s: +query.seconds.toFixed(2),
    query_mb_per_s: Math.round(mb / query.seconds),
    query_mb_per_cpu_s: Math.round(mb / query.cpu),
    query_peak_rss_mb: Math.round(query.rssKb / 1024),
    load_average: loadavg()[0],
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join(REPO, 'bench', 'out'), { recursive: true });
  writeFileSync(join(REPO, 'bench', 'out', 'audit.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
