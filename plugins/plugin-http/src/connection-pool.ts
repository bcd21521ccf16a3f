import { ReadBuffers } from './read-buffers.js';
import { UpstreamConnection, type ConnectionUser } from './upstream-connection.js';

/**
 * Keep-alive connections to http:// upstreams, reused across passthrough downloads (a fresh TCP connection
 * per download cost a connect, an accept and a close each time). Only connections whose last answer was
 * fully and correctly framed come back here (passthrough-reader.ts decides); an idle one is dropped when the
 * upstream sends anything or closes, after IDLE_MS, or when its origin already keeps MAX_IDLE_PER_ORIGIN.
 */
const MAX_IDLE_PER_ORIGIN = 64;
/** Below the 5 s keep-alive timeout of node's HTTP server, so that mostly we, not the upstream, close first. */
const IDLE_MS = 4000;

export class ConnectionPool {
  private readonly idle = new Map<string, UpstreamConnection[]>();
  private closed = false;
  /** Body read buffers, shared by all of this pool's connections (read-buffers.ts). */
  private readonly bodyBuffers = new ReadBuffers();

  /** An idle connection to the URL's origin if there is one (`reused`), else a new one. */
  acquire(url: URL): { connection: UpstreamConnection; reused: boolean } {
    const connection = this.idle.get(url.host)?.pop();
    if (connection) {
      connection.socket.ref();
      return { connection, reused: true };
    }
    return { connection: this.connect(url), reused: false };
  }

  /** A new connection, reading into this pool's shared body buffers. */
  connect(url: URL): UpstreamConnection {
    return new UpstreamConnection(url, this.bodyBuffers);
  }

  /** Keeps a connection whose exchange ended cleanly (its buffers free), or closes it if there is no room. */
  release(url: URL, connection: UpstreamConnection): void {
    const list = this.idle.get(url.host) ?? [];
    if (this.closed || connection.socket.destroyed || list.length >= MAX_IDLE_PER_ORIGIN) {
      connection.socket.destroy();
      return;
    }
    const drop = () => {
      connection.socket.destroy();
      const at = list.indexOf(connection);
      if (at >= 0) list.splice(at, 1);
    };
    const idleUser: ConnectionUser = {
      // An idle upstream has nothing to say; whatever it sends makes the connection unusable.
      onData: () => (drop(), false),
      onError: drop,
      onClose: drop,
      onTimeout: drop,
    };
    connection.user = idleUser;
    connection.socket.setTimeout(IDLE_MS);
    connection.socket.unref();
    list.push(connection);
    this.idle.set(url.host, list);
    // Reading on while idle is how a close by the upstream is seen.
    connection.read();
  }

  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) for (const connection of list.splice(0)) connection.socket.destroy();
  }
}
