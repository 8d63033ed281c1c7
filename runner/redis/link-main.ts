/**
 * @module The Redis link process (dist/skill-mcp-redis.cjs; docs/architecture.md §8): everything
 * that speaks to the runners' shared Redis — the spent-token ledger, data folders' shared turns,
 * and the audit stream's mirror — in a process of its own, started by the runner (as root: under
 * a uid of its own from the run range, without privileges). So the Redis client library and its
 * parsing of what the network sends never run in the privileged process. It speaks frames on
 * stdin and stdout (runner/redis/link-protocol.ts); the runner checks every answer.
 *
 * It knows nothing of the audit log on disk: the mirror asks the runner for the lines after the
 * stream's head (`ask: lines`), and the runner reads its own log.
 */
import { SkillMcpError } from '../../shared/errors.js';
import { FrameCodec } from '../../shared/frame-codec.js';
import { AuditMirror } from '../audit/mirror.js';
import { SharedTurns } from '../data/shared-turns.js';
import { RedisLedger } from '../ledger/redis.js';
import { RedisLink, type LinkChange } from './connection.js';
import { MAX_LINK_FRAME_BYTES, type MirrorLine, safeWhy, type ToLink, type FromLink } from './link-protocol.js';
import type { RedisSettings } from './options.js';

const writer = new FrameCodec(MAX_LINK_FRAME_BYTES);

/**
 * How long the mirror waits after a poke before it reads and sends what is new. Measured
 * (bench/ledger.mjs): mirroring each line at once put its round trips (the runner reading its log,
 * Redis's appends) beside the run's own path and cost a Redis runner's run ~10 ms at the median;
 * waiting this long sends a run's lines in one round after it, and the cost is gone.
 */
const MIRROR_DELAY_MS = 50;

function send(message: FromLink): void {
  process.stdout.write(writer.encode(message));
}

/** The runner's messages, one by one (it is trusted: what it sends is used as it comes). */
async function* messages(): AsyncGenerator<unknown> {
  const reader = new FrameCodec(MAX_LINK_FRAME_BYTES);
  for await (const chunk of process.stdin as AsyncIterable<Buffer>)
    for (const event of reader.push(chunk)) {
      if (!event.ok) throw event.error;
      yield event.value;
    }
}

/** Whether Redis keeps an append-only file (else a Redis restart forgets spent tokens). */
async function aofEnabled(link: RedisLink): Promise<boolean | 'unknown'> {
  try {
    const info = await link.client.info('persistence');
    const match = /^aof_enabled:(\d)/m.exec(info);
    return match ? match[1] === '1' : 'unknown';
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const iterator = messages();
  const first = await iterator.next();
  if (first.done) process.exit(0);
  const settings = (first.value as { settings: RedisSettings }).settings;

  let ledger: RedisLedger | undefined;
  const status = () => ledger?.status() ?? { kind: 'redis' as const, available: false, errors: 0 };
  const onChange = (change: LinkChange): void =>
    send(
      change.up ? { event: 'up', downMs: change.downMs, status: status() } : { event: 'down', why: safeWhy(change.why), status: status() },
    );
  const link = await RedisLink.open(settings, onChange);
  // The mirror's lines come from the runner, one request at a time.
  let asked = 0;
  const waiting = new Map<number, (lines: MirrorLine[]) => void>();
  const source = (after: number): Promise<MirrorLine[]> =>
    new Promise((resolve) => {
      asked += 1;
      waiting.set(asked, resolve);
      send({ ask: 'lines', id: asked, after });
    });
  const mirror = new AuditMirror(link, source, (message) => send({ event: 'warning', message }));
  link.client.on('ready', () => mirror.poke());
  ledger = new RedisLedger(link, (jti) => send({ event: 'released', jti }));
  const turns = new SharedTurns(link);
  const takes = new Map<number, { leave: AbortController; give?: () => Promise<void> }>();

  const connected = await link.start();
  const aof = connected ? await aofEnabled(link) : 'unknown';
  send({ event: 'ready', connected, aof, status: status() });

  const answer = async (id: number, work: () => Promise<unknown>): Promise<void> => {
    try {
      send({ id, ok: true, value: await work(), status: status() });
    } catch (error) {
      const why = error instanceof SkillMcpError && error.code === 'LEDGER_UNAVAILABLE' ? 'unavailable' : 'internal';
      send({
        id,
        ok: false,
        why: safeWhy(why === 'unavailable' ? link.lastWhy : 'error'),
        unavailable: why === 'unavailable',
        status: status(),
      });
    }
  };

  let pokeTimer: NodeJS.Timeout | undefined;
  for (;;) {
    const next = await iterator.next();
    if (next.done) break;
    const message = next.value as ToLink;
    switch (message.op) {
      case 'has':
        void answer(message.id, () => ledger!.has(message.jti));
        break;
      case 'spend':
        void answer(message.id, () => ledger!.spend(message.jti, message.exp, message.now));
        break;
      case 'take': {
        const entry: { leave: AbortController; give?: () => Promise<void> } = { leave: new AbortController() };
        takes.set(message.id, entry);
        void answer(message.id, async () => {
          const took = await turns.take(message.folder, entry.leave.signal, message.waitMs);
          if (!took.ok) {
            takes.delete(message.id);
            return took.why === 'down' ? { ok: false, why: 'down', detail: safeWhy(took.detail) } : { ok: false, why: took.why };
          }
          entry.give = took.give;
          return { ok: true };
        });
        break;
      }
      case 'leave':
        takes.get(message.take)?.leave.abort();
        break;
      case 'give': {
        const entry = takes.get(message.take);
        takes.delete(message.take);
        void entry?.give?.();
        break;
      }
      case 'poke':
        // Off the run's path: lines written close together (a run's accept and exit) go in one round.
        pokeTimer ??= setTimeout(() => {
          pokeTimer = undefined;
          mirror.poke();
        }, MIRROR_DELAY_MS);
        break;
      case 'lines':
        waiting.get(message.id)?.(message.lines);
        waiting.delete(message.id);
        break;
      case 'close':
        // What a pending poke would have sent goes now, before the last round is awaited.
        if (pokeTimer !== undefined) {
          clearTimeout(pokeTimer);
          mirror.poke();
        }
        await Promise.race([mirror.idle().then(() => ledger!.close()), new Promise((resolve) => setTimeout(resolve, message.waitMs))]);
        process.exit(0);
    }
  }
  // The runner is gone: nothing more to do for it.
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`skill-mcp redis link: ${(error as Error).message}\n`);
  process.exit(1);
});
