import { createHash, randomBytes } from 'node:crypto';
import type { ServerConfig } from '../config/server-config.js';
import { dialectOf } from '../db/connect.js';
import type { Listener } from '../db/dialect.js';
import type { Logger } from '../log.js';

/**
 * Instances telling each other that work is there (docs/runs.md, "Claims and wake-ups"): a run was queued, a place
 * freed, a cancel asked, output written. A wake-up carries a kind and an id only (a queue's name, a run's id): the
 * database stays the authority, and the woken instance reads it as its poll would, only sooner. A wake-up lost (the
 * connection down, a message dropped) costs latency, never correctness: polling (`runs.poll_interval`) goes on
 * beside it, and every resumption wakes everything.
 */
export type WakeupKind = 'queued' | 'freed' | 'cancel' | 'output';

export interface Wakeups {
  /** How wake-ups travel (`runs.wakeups` resolved): `poll` tells nobody. */
  readonly mode: 'poll' | 'notify' | 'redis';
  /** Whether wake-ups from other instances arrive now (false: polling alone). */
  live(): boolean;
  /** Tells the other instances (never this one). */
  tell(kind: WakeupKind, id: string): void;
  /** What this instance does on another's wake-up of a kind, and (`resumed`) when wake-ups arrive again after a gap. */
  listen(handlers: WakeupHandlers): void;
  close(): Promise<void>;
}

export interface WakeupHandlers {
  wake(kind: WakeupKind, id: string): void;
  /** Wake-ups arrive (again): any told meanwhile were lost, so everything is looked at now. */
  resumed(): void;
}

const CODES: Record<WakeupKind, string> = { queued: 'q', freed: 'f', cancel: 'c', output: 'o' };
const KINDS = new Map(Object.entries(CODES).map(([kind, code]) => [code, kind as WakeupKind]));
/** The LISTEN channel on PostgreSQL. */
const CHANNEL = 'tkgate_wakeups';

/** Polling alone: nothing is told, nothing arrives. */
const POLL_ONLY: Wakeups = { mode: 'poll', live: () => false, tell() {}, listen() {}, close: async () => undefined };

/** What a message says: `<code>:<id>:<origin>`, the origin being the sending instance (its own are not for it). */
function reader(origin: string, handlers: () => WakeupHandlers | undefined) {
  return (payload: string) => {
    const [code, id, from] = payload.split(':');
    const kind = code === undefined ? undefined : KINDS.get(code);
    if (!kind || !id || from === origin) return;
    handlers()?.wake(kind, id);
  };
}

/** The wake-ups `runs.wakeups` names: `auto` is LISTEN/NOTIFY where the database has it (PostgreSQL), polling elsewhere. */
export async function openWakeups(config: ServerConfig, log: Logger): Promise<Wakeups> {
  const dialect = dialectOf(config.db);
  const mode = config.runs.wakeups === 'auto' ? (dialect.openListener ? 'notify' : 'poll') : config.runs.wakeups;
  if (mode === 'poll') return POLL_ONLY;
  const origin = randomBytes(6).toString('hex');
  let handlers: WakeupHandlers | undefined;
  let live = false;
  const read = reader(origin, () => handlers);
  const up = (what: string) => {
    if (!live) log.info(`run wake-ups (${what}) listening`);
    live = true;
    handlers?.resumed();
  };
  const down = (what: string, error: Error) => {
    if (live) log.warn(`run wake-ups (${what}) down; polling every runs.poll_interval until they are back`, { error: error.message });
    live = false;
  };
  const common = {
    mode,
    live: () => live,
    listen(wanted: WakeupHandlers) {
      handlers = wanted;
    },
  };
  if (mode === 'notify') {
    const listener: Listener = dialect.openListener!(config.db, CHANNEL, {
      message: read,
      up: () => up('LISTEN/NOTIFY'),
      down: (error) => down('LISTEN/NOTIFY', error),
    });
    return { ...common, tell: (kind, id) => listener.notify(`${CODES[kind]}:${id}:${origin}`), close: () => listener.close() };
  }
  return redisWakeups(config, log, origin, read, common, up, down);
}

/**
 * Redis publish/subscribe (`runs.wakeups: redis`): one connection subscribed, one publishing. Publish/subscribe spans
 * a server's numbered databases, so the channel is named after the database the instances share.
 */
async function redisWakeups(
  config: ServerConfig,
  log: Logger,
  origin: string,
  read: (payload: string) => void,
  common: Pick<Wakeups, 'mode' | 'live' | 'listen'>,
  up: (what: string) => void,
  down: (what: string, error: Error) => void,
): Promise<Wakeups> {
  // Loaded only for these wake-ups: a gateway without them never loads the Redis client.
  const { Redis } = await import('ioredis');
  const shared = createHash('sha256').update(dialectOf(config.db).address(config.db)).digest('hex').slice(0, 16);
  const channel = `tkgate:wakeups:${shared}`;
  const options = {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: config.db.timeout_ms,
    retryStrategy: (times: number) => Math.min(times * 200, 5_000),
  };
  const subscriber = new Redis(config.redis.url, options);
  const publisher = new Redis(config.redis.url, { ...options, enableOfflineQueue: false });
  subscriber.on('message', (from: string, payload: string) => from === channel && read(payload));
  // Subscribed on every (re)connection: ioredis would subscribe again only to what it had subscribed before, and
  // Redis may be down when the gateway starts.
  subscriber.on('ready', () => {
    subscriber.subscribe(channel).then(
      () => up('Redis'),
      () => undefined,
    );
  });
  subscriber.on('close', () => down('Redis', new Error('the subscribed connection closed')));
  subscriber.on('error', () => undefined);
  publisher.on('error', () => undefined);
  await subscriber.connect().catch((err: Error) => log.warn('run wake-ups (Redis) unreachable; polling until it answers', { error: err.message }));
  await publisher.connect().catch(() => undefined);
  return {
    ...common,
    tell: (kind, id) => void publisher.publish(channel, `${CODES[kind]}:${id}:${origin}`).catch(() => undefined),
    async close() {
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}
