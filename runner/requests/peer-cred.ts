/**
 * @module Who is on the other end of a unix socket: `getsockopt(SO_PEERCRED)` through the koffi
 * FFI (prebuilt, no compiler; Node has no API for it). When koffi cannot load, the runner says so
 * at start and relies on the socket directory's and socket's modes alone.
 */
import type { Socket } from 'node:net';
import { koffiWhy, loadLibc } from '../../shared/libc.js';

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

export type PeerCredReader = (socket: Socket) => PeerCred | undefined;

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const UCRED_BYTES = 12;

/** Loads the reader, or returns why it is unavailable. */
export function loadPeerCredReader(): { read: PeerCredReader } | { why: string } {
  if (process.platform !== 'linux') return { why: 'SO_PEERCRED is read on Linux only' };
  let getsockopt: (...args: unknown[]) => number;
  const loaded = loadLibc();
  if (!loaded.ok) return { why: koffiWhy(loaded.error) };
  try {
    getsockopt = loaded.libc.func('int getsockopt(int, int, int, _Out_ uint8_t *, _Inout_ uint32_t *)');
  } catch (error) {
    return { why: koffiWhy(error) };
  }
  return {
    read(socket: Socket): PeerCred | undefined {
      const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (typeof fd !== 'number' || fd < 0) return undefined;
      const buf = Buffer.alloc(UCRED_BYTES);
      const len = [UCRED_BYTES];
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, buf, len) !== 0 || len[0] !== UCRED_BYTES) return undefined;
      return { pid: buf.readInt32LE(0), uid: buf.readUInt32LE(4), gid: buf.readUInt32LE(8) };
    },
  };
}
