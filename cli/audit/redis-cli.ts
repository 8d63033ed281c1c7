/**
 * @module `skill-mcp audit verify|tail --redis URL`: the one audit view across hosts, read from the
 * stream every runner sharing that Redis mirrors its log into. `tail` prints the last N lines of
 * all hosts, each led by its host id, and with `-f` follows new ones; `verify` checks each host's
 * chain and head; `query` reads the whole stream through the query's filters (./query.ts), as text
 * led by the host id, JSON lines, or OCSF events whose device is the host (./ocsf.ts). URL `-` reads
 * `SKILL_MCP_REDIS_URL` (a password in argv is visible to `ps`).
 */
import { existsSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { renderAuditLine, renderValue } from './render.js';
import { parseHead, streamKeys } from '../../runner/audit/stream-keys.js';
import { compareWithLocal } from './stream-compare.js';
import { verifyStream, type StreamEntry } from './stream-verify.js';
import { clientOptions, reasonOf } from '../../runner/redis/connection.js';
import { parseRedisUrl, readRedisSettings } from '../../runner/redis/options.js';
import { AuditQuery, type QueryFilter, type QueryFormat } from './query.js';
import { toOcsf } from './ocsf.js';

/** How long one blocking read of `tail -f` waits before asking again. */
const FOLLOW_BLOCK_MS = 5000;
const PAGE = 1000;

/** ioredis is loaded here, not at the bin's start: every other command (and every server) starts without it. */
async function connect(
  rawUrl: string,
  env: NodeJS.ProcessEnv,
  extraTimeoutMs: number,
  auditPath: string,
): Promise<{ client: Redis; prefix: string; display: string; hostId: string }> {
  const url = rawUrl === '-' ? (env['SKILL_MCP_REDIS_URL'] ?? '') : rawUrl;
  if (url === '') throw new Error('--redis - reads SKILL_MCP_REDIS_URL, which is not set');
  const target = parseRedisUrl(url, '--redis');
  // The runner's own reading of the other variables (prefix, CA, timeout); its host id is not used here.
  const settings = readRedisSettings({ ...env, SKILL_MCP_REDIS_URL: url }, auditPath)!;
  const { Redis } = await import('ioredis');
  const client = new Redis({ ...clientOptions(target, settings.timeoutMs + extraTimeoutMs, settings.ca), retryStrategy: () => null });
  client.on('error', () => undefined);
  return { client, prefix: settings.prefix, display: target.display, hostId: settings.hostId };
}

function entryOf([id, fields]: [string, string[]]): StreamEntry {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  return { id, host: map.get('host') ?? '?', seq: Number(map.get('seq')), line: map.get('line') ?? '' };
}

function print(entry: StreamEntry): void {
  process.stdout.write(`${renderValue(entry.host)} ${renderAuditLine(entry.line)}\n`);
}

/**
 * Every host's lines through the query's filters, a page at a time, in the stream's order (a run's
 * lines stay in its host's order, so a run matched by skill brings its later lines along).
 */
async function queryStream(client: Redis, stream: string, filter: QueryFilter, format: QueryFormat): Promise<void> {
  let host = '';
  const unmapped = new Map<string, number>();
  const query = new AuditQuery(filter, (line, parsed) => {
    if (format === 'json') process.stdout.write(`${line}\n`);
    else if (format === 'text') process.stdout.write(`${renderValue(host)} ${renderAuditLine(line)}\n`);
    else {
      const events = toOcsf(parsed, { hostname: host });
      if (events.length === 0) unmapped.set(String(parsed['event']), (unmapped.get(String(parsed['event'])) ?? 0) + 1);
      for (const event of events) process.stdout.write(`${JSON.stringify(event)}\n`);
    }
  });
  for (let start = '-'; ; ) {
    const page = (await client.xrange(stream, start, '+', 'COUNT', PAGE)).map(entryOf);
    for (const entry of page) {
      host = entry.host;
      query.line(Buffer.from(entry.line));
    }
    if (page.length < PAGE) break;
    start = `(${page.at(-1)!.id}`;
  }
  if (unmapped.size > 0)
    process.stderr.write(
      `skill-mcp audit: lines with no OCSF event class here were not written: ${[...unmapped].map(([event, n]) => `${event} ×${n}`).join(', ')}\n`,
    );
}

export async function redisAuditMain(
  command: 'verify' | 'tail' | 'query',
  rawUrl: string,
  options: { count: number; follow: boolean; localLog?: string; filter?: QueryFilter; format?: QueryFormat },
): Promise<void> {
  const { client, prefix, display, hostId } = await connect(
    rawUrl,
    process.env,
    command === 'tail' && options.follow ? FOLLOW_BLOCK_MS : 0,
    options.localLog ?? '/',
  );
  const keys = streamKeys(prefix);
  try {
    await client.connect();
  } catch (error) {
    process.stderr.write(`skill-mcp audit: cannot reach ${display} (${reasonOf(error)}); check the URL (host, port, password, TLS)\n`);
    process.exitCode = 1;
    client.disconnect();
    return;
  }
  try {
    if (command === 'tail') {
      const last = (await client.xrevrange(keys.stream, '+', '-', 'COUNT', options.count)).reverse().map(entryOf);
      for (const entry of last) print(entry);
      if (!options.follow) return;
      let from = last.at(-1)?.id ?? '$';
      for (;;) {
        const answer = await client.xread('BLOCK', FOLLOW_BLOCK_MS, 'STREAMS', keys.stream, from);
        for (const [, items] of answer ?? []) {
          for (const item of items) {
            const entry = entryOf(item);
            print(entry);
            from = entry.id;
          }
        }
      }
    }
    if (command === 'query') return await queryStream(client, keys.stream, options.filter ?? {}, options.format ?? 'text');
    const entries: StreamEntry[] = [];
    for (let start = '-'; ; ) {
      const page = (await client.xrange(keys.stream, start, '+', 'COUNT', PAGE)).map(entryOf);
      entries.push(...page);
      if (page.length < PAGE) break;
      start = `(${page.at(-1)!.id}`;
    }
    const heads = new Map<string, { seq: number; sha256: string }>();
    for (const [host, raw] of Object.entries(await client.hgetall(keys.heads))) {
      const head = parseHead(raw);
      if (head) heads.set(host, head);
    }
    const verdicts = verifyStream(entries, heads);
    if (verdicts.length === 0) process.stdout.write(`no audit lines in ${keys.stream} at ${display}\n`);
    for (const v of verdicts) process.stdout.write(`host ${renderValue(v.host)}: ${v.message}\n`);
    if (verdicts.some((v) => !v.ok)) process.exitCode = 1;
    if (options.localLog !== undefined && existsSync(options.localLog)) {
      const mine = entries.filter((e) => e.host === hostId);
      const found = await compareWithLocal(options.localLog, mine);
      process.stdout.write(`local ${options.localLog} vs host ${renderValue(hostId)}: ${found.message}\n`);
      if (!found.ok) process.exitCode = 1;
    }
  } catch (error) {
    process.stderr.write(`skill-mcp audit: reading ${keys.stream} at ${display} failed (${reasonOf(error)})\n`);
    process.exitCode = 1;
  } finally {
    client.disconnect();
  }
}
