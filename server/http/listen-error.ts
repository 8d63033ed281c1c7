/**
 * @module Why the HTTP front could not listen, in words that say what to do next. A front that
 * cannot listen exits (non-zero, taking its runner guard with it) instead of living on, serving
 * nothing.
 */

export interface ListenContext {
  host: string;
  port: number;
  /** Set when the front was started as root and already dropped to this unprivileged uid. */
  droppedToUid: number | undefined;
}

/** The one-line reason for a failed `listen`, naming the host and port and the fix. */
export function describeListenError(error: unknown, where: ListenContext): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const at = `cannot listen on ${where.host}:${where.port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `${at}: the port is already in use (another skill-mcp, or another server); pick a free one with --port`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return `${at}: the host name ${JSON.stringify(where.host)} does not resolve; pass an address of this machine with --host (e.g. 127.0.0.1)`;
    case 'EADDRNOTAVAIL':
      return `${at}: ${where.host} is not an address of this machine; pass one of its addresses with --host (e.g. 127.0.0.1, or 0.0.0.0 for all)`;
    case 'EACCES':
      if (where.droppedToUid !== undefined) {
        return `${at}: permission denied. The front already runs as its unprivileged uid ${where.droppedToUid} (started as root, it drops root before it serves), so ports below 1024 are not open to it: listen on a port from 1024 up behind a reverse proxy, or lower net.ipv4.ip_unprivileged_port_start`;
      }
      return `${at}: permission denied (ports below 1024 need privileges); use a port from 1024 up, behind a reverse proxy if clients need a low one, or lower net.ipv4.ip_unprivileged_port_start`;
    default:
      return `${at}: ${error instanceof Error ? error.message : String(error)}`;
  }
}
