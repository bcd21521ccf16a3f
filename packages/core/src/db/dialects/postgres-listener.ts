import pg from 'pg';
import type { DatabaseSettings, Listener, ListenerEvents } from '../dialect.js';
import { DEFAULT_CONNECT_MS } from './shared.js';

/** The waits before connecting again after a drop: short at first (a restart), then every few seconds. */
const RECONNECT_MS = [100, 500, 1_000, 2_000, 5_000];
/** The most a payload holds: PostgreSQL refuses more than 8000 bytes; ours are a kind, an id and an origin. */
const MAX_PAYLOAD = 200;
/** Notifications sent in one statement at most. */
const SEND_BATCH = 100;

/**
 * LISTEN on a connection of its own (a pooled one would be lent to others and lose its LISTEN). It is made
 * again after a drop (the server restarted, the network), LISTENing again each time; while it is down,
 * notifications are lost both ways and `events.down` lets the caller poll. NOTIFY goes through it too: a
 * notification sent after the write it tells of has committed, without taking a connection of the pool.
 */
export function openPostgresListener(settings: DatabaseSettings, channel: string, events: ListenerEvents): Listener {
  let client: pg.Client | undefined;
  let ready = false;
  let closed = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;

  const dropped = (current: pg.Client, error: Error) => {
    if (client !== current) return;
    client = undefined;
    const wasReady = ready;
    ready = false;
    current.removeAllListeners('notification');
    void current.end().catch(() => undefined);
    if (closed) return;
    if (wasReady || attempt === 0) events.down(error);
    timer = setTimeout(connect, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]);
    timer.unref();
    attempt++;
  };

  const connect = () => {
    if (closed) return;
    const current = new pg.Client({
      connectionString: settings.url,
      connectionTimeoutMillis: settings.timeout_ms ?? DEFAULT_CONNECT_MS,
      keepAlive: true,
      application_name: 'tkgate-listener',
    });
    client = current;
    current.on('error', (err) => dropped(current, err));
    current.on('end', () => dropped(current, new Error('the listening connection ended')));
    current.on('notification', (note) => {
      if (note.channel === channel && note.payload !== undefined) events.message(note.payload);
    });
    current
      .connect()
      .then(() => current.query(`LISTEN ${pg.escapeIdentifier(channel)}`))
      .then(() => {
        if (client !== current || closed) return;
        ready = true;
        attempt = 0;
        events.up();
      })
      .catch((err: Error) => dropped(current, err));
  };
  // One statement at a time on the connection: the notifications asked for meanwhile go in the next, together.
  const pending: string[] = [];
  let sending = false;
  const send = async () => {
    sending = true;
    while (pending.length > 0 && ready && client) {
      const batch = pending.splice(0, SEND_BATCH);
      const calls = batch.map((_, i) => `pg_notify($1, $${i + 2})`).join(', ');
      await client.query(`SELECT ${calls}`, [channel, ...batch]).catch(() => undefined);
    }
    pending.length = 0;
    sending = false;
  };

  connect();

  return {
    notify(payload) {
      if (!ready || payload.length > MAX_PAYLOAD) return;
      pending.push(payload);
      if (!sending) void send();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      const current = client;
      client = undefined;
      ready = false;
      await current?.end().catch(() => undefined);
    },
  };
}
