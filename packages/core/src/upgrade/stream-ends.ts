import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { Logger } from '../log.js';
import type { SessionStore } from '../sessions/session-store.js';

/** The credential behind an open stream: a session's or an API key's hash. */
export interface StreamCredential {
  kind: 'session' | 'api_key';
  hash: string;
}

interface OpenStream {
  credential: StreamCredential;
  end: () => void;
}

/**
 * A credential's end ends its streams: the WebSockets and streamed downloads open on this instance, by the
 * credential they were opened with. Every `sessions.cache_ttl` (at least every second) while any is open, their
 * credentials are read again from the database, one query for all the sessions, and the streams of a session or
 * key that ended (logout anywhere, clear-sessions, back-channel logout, expiry, eviction, user disabled, key
 * revoked or expired) are ended: a WebSocket closes with 4401 session_ended, a download is cut.
 */
export class StreamEnds {
  private readonly open = new Set<OpenStream>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly stores: { sessions: SessionStore; apiKeys: ApiKeyStore },
    private readonly everyMs: number,
    private readonly log: Logger,
  ) {}

  /** Watches a stream until `closed` emits 'close'. */
  watch(credential: StreamCredential, end: () => void, closed: { on(event: 'close', listener: () => void): unknown }): void {
    const stream = { credential, end };
    this.open.add(stream);
    // `on`, not `once`: a stream closes once, and once's wrapper would stay for the stream's life.
    closed.on('close', () => {
      this.open.delete(stream);
      if (this.open.size === 0) this.stop();
    });
    this.timer ??= setInterval(() => void this.check(), this.everyMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async check(): Promise<void> {
    if (this.checking || this.open.size === 0) return;
    this.checking = true;
    try {
      const streams = [...this.open];
      const hashes = (kind: StreamCredential['kind']) => [...new Set(streams.filter((s) => s.credential.kind === kind).map((s) => s.credential.hash))];
      const [sessions, keys] = await Promise.all([this.stores.sessions.liveOf(hashes('session')), this.stores.apiKeys.liveOf(hashes('api_key'))]);
      for (const stream of streams) {
        const live = stream.credential.kind === 'session' ? sessions : keys;
        if (!live.has(stream.credential.hash) && this.open.delete(stream)) stream.end();
      }
    } catch (err) {
      // A database that cannot answer now ends nothing: the next round asks again.
      this.log.warn('open streams: credentials not checked', { err });
    } finally {
      this.checking = false;
    }
  }
}
