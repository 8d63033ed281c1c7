/**
 * @module The runner's socket (docs/architecture.md §8). The socket sits in a directory only the runner and the
 * front's group can enter (0750, socket 0660; 0700/0600 when no front group is configured); each
 * connection's peer credentials are checked where the platform allows. Frames are decoded with a
 * hard cap, each request is validated against the closed table, and every failure becomes a
 * refusal frame with a stable code: input never crashes the daemon. The first request of every
 * connection must be `hello`: it carries the front's secret (when the runner has one) and the
 * front's configuration view; prepare and run are refused while the two configurations differ.
 */
import { chmodSync, chownSync, lstatSync, unlinkSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { dirname } from 'node:path';
import { isSkillMcpError, SkillMcpError } from '../../shared/errors.js';
import { FrameCodec, MAX_REQUEST_FRAME_BYTES, MAX_RESPONSE_FRAME_BYTES } from '../../shared/frame.js';
import { mismatchMessage, viewDifferences } from '../../shared/config-view.js';
import type { ConfigView, ViewPart } from '../../shared/config-view.js';
import { PROTOCOL_VERSION, requestSchema } from '../../shared/protocol.js';
import type { RunnerRequest } from '../../shared/protocol.js';
import type { AuditLog } from '../audit/log.js';
import { frontSecretMatches } from './front-auth.js';
import type { PeerCredReader } from './peer-cred.js';
import type { RunnerService } from './service.js';
import { ensurePrivateDir } from '../state.js';

/** A connection that sends nothing for this long (and has no run pending) is closed. */
const IDLE_MS = 30_000;
/** Connections beyond those runs hold (one each, waiting or running): describe, prepare, cancel. */
const SPARE_CONNECTIONS = 16;

export interface ListenOptions {
  socketPath: string;
  frontUid: number | undefined;
  frontGid: number | undefined;
  peerCred: PeerCredReader | undefined;
  service: RunnerService;
  audit: AuditLog;
  /** The per-instance (or operator's) front secret; absent: the peer check alone decides. */
  frontSecret: string | undefined;
  /** The runner's own configuration view, recomputed for each hello. */
  view: () => ConfigView;
  /** Tells the operator (stderr) how a front's configuration differs; never sent to the front. */
  onMismatch: (differs: ViewPart[]) => void;
  /** The most connections runs can hold at once (every slot and queue place); more get a spare margin on top. */
  maxRunConnections: number;
}

/** What a connection established in its hello. */
interface Session {
  differs: ViewPart[];
}

/** Whether a peer may talk to the runner: root, the runner's own uid, or the configured front. */
function peerAllowed(uid: number, gid: number, opts: ListenOptions): boolean {
  if (uid === 0 || uid === process.getuid!()) return true;
  if (opts.frontUid !== undefined && uid === opts.frontUid) return true;
  return opts.frontUid === undefined && opts.frontGid !== undefined && gid === opts.frontGid;
}

async function removeStaleSocket(path: string): Promise<void> {
  let isSocket = false;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return;
  }
  if (!isSocket) throw new SkillMcpError('INTERNAL', `${path} exists and is not a socket; refusing to replace it`);
  const alive = await new Promise<boolean>((resolve) => {
    const probe = createConnection(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (alive) throw new SkillMcpError('INTERNAL', `another runner is already listening on ${path}`);
  unlinkSync(path);
}

function handleConnection(socket: Socket, opts: ListenOptions): void {
  // A run's first phase (`receive`, runner/requests/phases.ts) starts when its connection does.
  const connectedAt = performance.now();
  const codec = new FrameCodec(MAX_REQUEST_FRAME_BYTES);
  const out = new FrameCodec(MAX_RESPONSE_FRAME_BYTES);
  const gone = new AbortController();
  let pending = 0;
  const send = (value: unknown): void => {
    if (socket.destroyed) return;
    try {
      socket.write(out.encode(value));
    } catch (error) {
      socket.write(
        out.encode({
          ok: false,
          error: { code: isSkillMcpError(error) ? error.code : 'INTERNAL', message: 'the answer could not be encoded' },
        }),
      );
    }
  };
  socket.setTimeout(IDLE_MS, () => {
    if (pending === 0) socket.destroy();
  });
  socket.on('error', () => undefined);
  // A run whose asker went away is killed: nobody is left to read its result.
  socket.on('close', () => gone.abort());

  const cred = opts.peerCred?.(socket);
  // Security: a process that reached the socket despite the directory modes (a mis-set group, a
  // passed fd) is still refused by uid.
  if (opts.peerCred && (!cred || !peerAllowed(cred.uid, cred.gid, opts))) {
    // The refusal follows its own audit line (append never rejects and never hangs on a full disk).
    const line = cred ? opts.audit.append({ event: 'peer.refuse', uid: cred.uid, gid: cred.gid, pid: cred.pid }) : Promise.resolve();
    void line.then(() => {
      send({ ok: false, error: { code: 'PEER_REFUSED', message: 'this process may not talk to the runner' } });
      socket.end();
    });
    return;
  }

  let session: Session | undefined;
  let refused = false;
  /** Stops reading this connection at once; the refusal is sent once `line` (its audit line) is written. */
  const refusePeer = (message: string, line: Promise<void> = Promise.resolve()): void => {
    refused = true;
    void line.then(() => {
      send({ ok: false, error: { code: 'PEER_REFUSED', message } });
      socket.end();
    });
  };
  socket.on('data', (chunk: Buffer) => {
    for (const event of codec.push(chunk)) {
      if (refused) return;
      if (!event.ok) {
        send({ ok: false, error: { code: event.error.code, message: event.error.message } });
        if (event.fatal) socket.end();
        continue;
      }
      const parsed = requestSchema.safeParse(event.value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        send({
          ok: false,
          error: {
            code: 'BAD_REQUEST',
            message: `the request does not match the protocol${issue ? ` (${issue.path.join('.') || 'message'}: ${issue.message})` : ''}`,
          },
        });
        continue;
      }
      const req = parsed.data;
      if (!session) {
        // Security: nothing is served before the connection said who it is (OpenSSH's monitor: a
        // request outside the state's table ends the conversation).
        if (req.type !== 'hello') return refusePeer('the connection did not start with hello; this runner serves only its own front');
        // Security: another instance's front has the same uid (and so reaches the socket) but not
        // this instance's secret; refused before it can read this runner's skills or run them.
        if (!frontSecretMatches(opts.frontSecret, req.frontSecret)) {
          const line = opts.audit.append({
            event: 'peer.refuse',
            uid: cred?.uid ?? -1,
            gid: cred?.gid ?? -1,
            pid: cred?.pid ?? -1,
            reason: 'front-secret',
          });
          return refusePeer(
            'this runner serves another front: the front secret does not match (each standalone skill-mcp has its own runner; a hosted pair needs the same secret file on both sides: --front-secret-file and SKILL_MCP_FRONT_SECRET_FILE)',
            line,
          );
        }
        session = { differs: viewDifferences(opts.view(), req.view) };
        if (session.differs.length > 0) opts.onMismatch(session.differs);
        send({ ok: true, result: { protocol: PROTOCOL_VERSION } });
        continue;
      }
      pending++;
      void dispatch(req, opts.service, session, gone.signal, connectedAt)
        .then(send, (error: unknown) =>
          send({
            ok: false,
            error: {
              code: isSkillMcpError(error) ? error.code : 'INTERNAL',
              message: isSkillMcpError(error) ? error.message : 'the runner failed to handle the request; see its log',
            },
          }),
        )
        .finally(() => pending--);
    }
  });
}

async function dispatch(
  req: RunnerRequest,
  service: RunnerService,
  session: Session,
  gone: AbortSignal,
  connectedAt: number,
): Promise<unknown> {
  const mismatch = session.differs.length > 0 ? { differs: session.differs, message: mismatchMessage(session.differs) } : undefined;
  switch (req.type) {
    case 'hello':
      return { ok: false, error: { code: 'BAD_REQUEST', message: 'hello is only the first request of a connection' } };
    case 'describe':
      return {
        ok: true,
        result: { ...(await service.describe(req.skills, req.identity)), ...(mismatch ? { configMismatch: mismatch } : {}) },
      };
    case 'prepare':
    case 'run':
      // Security: the person approved what the front showed; a runner reading other folders, another
      // mode or another grant would run something else under the same name.
      if (mismatch) return { ok: false, error: { code: 'CONFIG_MISMATCH', message: mismatch.message } };
      return req.type === 'prepare' ? service.prepare(req) : service.run(req, gone, connectedAt);
    case 'cancel':
      return { ok: true, result: service.cancel(req.cancelId) };
    case 'data-clear':
      // Security: the folder is derived from this runner's grant and skills, which must be the front's.
      if (mismatch) return { ok: false, error: { code: 'CONFIG_MISMATCH', message: mismatch.message } };
      return service.clearData(req);
  }
}

/** Creates the socket directory and socket with the right owners and modes, then listens. */
export async function listen(opts: ListenOptions): Promise<Server> {
  const dir = dirname(opts.socketPath);
  const shared = opts.frontGid !== undefined;
  ensurePrivateDir(dir, shared ? 0o750 : 0o700);
  if (shared) chownSync(dir, process.getuid!(), opts.frontGid!);
  await removeStaleSocket(opts.socketPath);
  const server = createServer((socket) => handleConnection(socket, opts));
  // Security: bounded, but never below what the run slots and their queue may hold, or a burst
  // the queue would absorb is cut off at the socket instead.
  server.maxConnections = opts.maxRunConnections + SPARE_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.socketPath, () => resolve());
  });
  chmodSync(opts.socketPath, shared ? 0o660 : 0o600);
  if (shared) chownSync(opts.socketPath, process.getuid!(), opts.frontGid!);
  return server;
}
