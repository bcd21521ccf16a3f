import { ReadBuffers } from './read-buffers.js';
import { UpstreamConnection, type ConnectionUser } from './upstream-connection.js';
import type { UpstreamTls } from './upstream-tls.js';

/**
 * Keep-alive connections to http:// and https:// upstreams, reused across passthrough downloads (a fresh TCP connection
 * per download cost a connect, an accept and a close each time). Only connections whose last answer was
 * fully and correctly framed come back here (passthrough-reader.ts decides); an idle one is dropped when the
 * upstream sends anything or closes (any byte outside an exchange retires a connection, as nginx and undici
 * do), after IDLE_MS, or when its group already keeps MAX_IDLE_PER_ORIGIN. Connections are kept per origin
 * connection group and caller (upstream-transport.ts, `connectionGroup`): another user's calls, or calls of endpoints
 * with other credentials or TLS material (upstream.tls), never share one, so that an upstream's answer sent
 * out of turn can only ever reach a call of the same user made with the same credentials.
 */
const MAX_IDLE_PER_ORIGIN = 64;
/** Below the 5 s keep-alive timeout of node's HTTP server, so that mostly we, not the upstream, close first. */
const IDLE_MS = 4000;
/**
 * Kept this much less than an upstream's `Keep-Alive: timeout` hint (as undici's keepAliveTimeoutThreshold):
 * a connection the upstream is about to close is not reused, since a request cut by that close is not retried.
 */
const HINT_MARGIN_MS = 1000;

const keyOf = (url: URL, group: string, caller: number) => `${url.host}\n${caller}\n${group}`;

export class ConnectionPool {
  private readonly idle = new Map<string, UpstreamConnection[]>();
  private closed = false;
  /** Body read buffers, shared by all of this pool's connections (read-buffers.ts). */
  private readonly bodyBuffers = new ReadBuffers();

  /** An idle connection of the group to the URL's origin if there is one, else a new one. */
  acquire(url: URL, group: string, caller: number, tls: UpstreamTls | undefined): UpstreamConnection {
    const key = keyOf(url, group, caller);
    const list = this.idle.get(key);
    for (let connection = list?.pop(); connection; connection = list?.pop()) {
      // One the upstream has half-closed, whose end this process has not handled yet, is never written to.
      if (connection.socket.destroyed || !connection.socket.writable || connection.socket.readableEnded) {
        connection.socket.destroy();
        continue;
      }
      connection.socket.ref();
      this.forgetIfEmpty(key, list!);
      return connection;
    }
    if (list) this.forgetIfEmpty(key, list);
    return this.connect(url, tls);
  }

  /** A new connection, reading into this pool's shared body buffers (TLS for an https:// URL). */
  connect(url: URL, tls?: UpstreamTls): UpstreamConnection {
    return new UpstreamConnection(url, this.bodyBuffers, tls);
  }

  /** Keeps a connection whose exchange ended cleanly (its buffers free), or closes it if there is no room. */
  release(url: URL, group: string, caller: number, connection: UpstreamConnection, upstreamIdleMs?: number): void {
    const key = keyOf(url, group, caller);
    const list = this.idle.get(key) ?? [];
    const idleMs = upstreamIdleMs === undefined ? IDLE_MS : Math.min(IDLE_MS, upstreamIdleMs - HINT_MARGIN_MS);
    if (this.closed || connection.socket.destroyed || list.length >= MAX_IDLE_PER_ORIGIN || idleMs <= 0) {
      connection.socket.destroy();
      return;
    }
    const drop = () => {
      connection.socket.destroy();
      const at = list.indexOf(connection);
      if (at >= 0) list.splice(at, 1);
      this.forgetIfEmpty(key, list);
    };
    const idleUser: ConnectionUser = {
      // An idle upstream has nothing to say; whatever it sends makes the connection unusable.
      onData: () => (drop(), false),
      onError: drop,
      onClose: drop,
      onTimeout: drop,
    };
    connection.user = idleUser;
    connection.timeSilence(idleMs);
    connection.socket.unref();
    list.push(connection);
    this.idle.set(key, list);
    // Reading on while idle is how a close by the upstream is seen.
    connection.read();
  }

  /** Groups are per user: an empty one is forgotten, so the map holds only groups with idle connections. */
  private forgetIfEmpty(key: string, list: UpstreamConnection[]): void {
    if (list.length === 0 && this.idle.get(key) === list) this.idle.delete(key);
  }

  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) for (const connection of list.splice(0)) connection.socket.destroy();
  }
}
