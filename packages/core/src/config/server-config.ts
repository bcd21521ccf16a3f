/**
 * The server configuration (docs/configuration.md): every key declared once below. convict layers the
 * sources (built-in defaults < config/default.json < --config FILE or TKGATE_CONFIG < env vars < CLI
 * flags) and maps the environment; each setting checks and normalises its own value, and the
 * ServerConfig type is derived from the same declaration. Adding a key is one line here plus the docs.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import convict from 'convict';
import { oidcProviderList, withClientSecrets } from './oidc-providers.js';
import { notificationSinkList } from './notification-sinks.js';
import { jwtIssuerList } from './jwt-issuers.js';
import type { LogLevel } from '../log.js';
import { dialectOf } from '../db/connect.js';
import { nearest } from '../suggest.js';
import { parseSourceFile } from './source-file.js';
import { inventorySourceList } from './fleet-settings.js';
import {
  duration,
  filePath,
  flag,
  fraction,
  integer,
  objectsByName,
  oneOf,
  optionalFile,
  originList,
  port,
  processCount,
  SettingProblem,
  stringList,
  structured,
  text,
  type Setting,
} from './settings.js';

export const DEFAULT_PLUGINS = ['@tkgate/plugin-internal', '@tkgate/plugin-http', '@tkgate/plugin-exec', '@tkgate/plugin-ssh'];

const positive = { min: 1 };

/** A Redis URL setting's check: empty, or redis: / rediss:. */
function redisUrl(value: string): void {
  if (value !== '' && (!URL.canParse(value) || !['redis:', 'rediss:'].includes(new URL(value).protocol)))
    throw new Error('must be empty or a URL like "redis://127.0.0.1:6379/0" (redis: or rediss:)');
}

const declaration = {
  server: {
    host: text('127.0.0.1', { doc: 'listen address', env: 'TKGATE_HOST' }),
    port: port(8080, { doc: 'listen port (0 = any free port; the chosen port is logged)', env: 'TKGATE_PORT' }),
    base_url: text('/api', { doc: 'prefix of every route', env: 'TKGATE_BASE_URL' }, (value) => {
      if (!/^(\/[A-Za-z0-9._~-]+)*$/.test(value)) throw new Error('must be empty or a path like "/api" (no trailing slash)');
    }),
    max_body_bytes: integer(1_048_576, { doc: 'hard cap for any request body' }, positive),
    body_timeout: duration('30s', {
      doc: 'longest time a request body read by the gateway may take to arrive, then 408 request_timeout and the connection is closed (0 = no bound)',
      env: 'TKGATE_BODY_TIMEOUT',
    }),
    trust_proxy: flag(false, { doc: 'take the client address from X-Forwarded-For', env: 'TKGATE_TRUST_PROXY' }),
    shutdown_delay: duration('0s', { doc: 'on SIGTERM, serve on this long with /readyz 503 before closing, so load balancers stop first' }),
    workers: processCount(1, { doc: 'worker processes serving one port, or "auto" for one per core', env: 'TKGATE_WORKERS' }),
    public_url: text('', { doc: 'the URL browsers reach the gateway at (e.g. https://gw.example.org), for OIDC callback URLs' }, (value) => {
      if (value !== '' && (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol) || new URL(value).origin !== value))
        throw new Error('must be empty or an origin like "https://gw.example.org" (no path or trailing slash)');
    }),
    tls: {
      cert: optionalFile({
        doc: 'PEM certificate (chain) file: with tls.key the listener speaks HTTPS only (TLS 1.2+); reloaded when the file changes or on SIGHUP',
        env: 'TKGATE_TLS_CERT',
      }),
      key: optionalFile({ doc: "PEM private key file of tls.cert (keep it readable by tkgate's user only)", env: 'TKGATE_TLS_KEY' }),
    },
    cors: {
      origins: originList({ doc: 'origins whose browser pages may call the gateway (exact, or ["*"]); [] sends no CORS header' }),
    },
  },
  db: {
    client: oneOf(['sqlite', 'mysql', 'postgres'], 'sqlite', { doc: 'sqlite, mysql (MySQL/MariaDB) or postgres (PostgreSQL)', env: 'TKGATE_DB_CLIENT' }),
    filename: filePath('./data/tkgate.sqlite', { doc: 'SQLite file (directory created)', env: 'TKGATE_DB_FILE' }),
    url: text('', {
      doc: 'MySQL/MariaDB or PostgreSQL URL, e.g. mysql://user:pass@127.0.0.1:3306/tkgate or postgres://user:pass@127.0.0.1:5432/tkgate',
      env: 'TKGATE_DB_URL',
      sensitive: true,
    }),
    timeout: duration(
      '5s',
      {
        doc: 'longest wait for the database: a connection, a query, a lock; past it a request is answered 503 unavailable with Retry-After',
        env: 'TKGATE_DB_TIMEOUT',
      },
      { minMs: 100 },
    ),
  },
  sessions: {
    idle_timeout: duration('30m', { doc: 'expiry after non-use', env: 'TKGATE_IDLE_TIMEOUT' }),
    absolute_lifetime: duration('24h', { doc: 'a session ends this long after login whatever its use' }),
    max_per_user: integer(5, { doc: 'concurrent sessions per user', env: 'TKGATE_MAX_SESSIONS' }, positive),
    persist: flag(true, { doc: 'store token hashes in the DB and reload them at start', env: 'TKGATE_PERSIST_SESSIONS' }),
    cache_ttl: duration('1s', { doc: 'how long a process may trust what it read about a session or user (0 = no cache)' }, { maxMs: 5_000 }),
  },
  auth: {
    admin_power: integer(100, { doc: 'power needed for clear-sessions' }),
    login_max_failures: integer(10, { doc: 'failed logins per username + client IP within the window' }, positive),
    login_window: duration('1m', { doc: 'window of the failed-login limit' }),
    password_login: flag(true, { doc: 'false answers POST {base}/auth/login with 403 password_login_disabled' }),
    api_keys_per_user: integer(20, { doc: 'live (neither revoked nor expired) API keys a user may have; one more is 409 too_many_keys' }, positive),
    oidc: {
      providers: structured(
        [],
        { doc: 'OpenID Connect providers people sign in through (docs/sso.md)', sensitive: true },
        oidcProviderList,
        'a list of providers, each an object with name, issuer, client_id and its other keys (docs/sso.md); its client secret comes from the environment',
      ),
    },
    jwt_issuers: structured(
      [],
      {
        doc: 'platforms whose signed tokens (CI OIDC tokens, Kubernetes service-account tokens) call toolkit endpoints as a tkgate user (docs/workload-identity.md)',
      },
      jwtIssuerList,
      'a list of issuers, each an object with name, issuer, audience, subjects, user and toolkits (docs/workload-identity.md)',
    ),
  },
  audit: {
    required: flag(false, {
      doc: 'an audited toolkit call whose event cannot be written before it runs is refused with 503 unavailable (false: logged, counted, and run)',
      env: 'TKGATE_AUDIT_REQUIRED',
    }),
    retention: duration('90d', { doc: 'audit events older than this are purged (by one instance at a time)' }, { minMs: 60_000 }),
  },
  runs: {
    heartbeat: duration('2s', { doc: 'how often the instance running a run records that it is alive' }, { minMs: 100 }),
    lost_after: duration('30s', { doc: 'a running run whose heartbeat is older than this is ended lost (instance_lost) by any instance' }, { minMs: 1_000 }),
    cancel_grace: duration('10s', { doc: 'a cancelled run gets SIGTERM, then SIGKILL after this long' }),
    drain_timeout: duration('30s', {
      doc: 'on SIGTERM, how long running runs may go on before they are killed and ended failed (gateway_stopped)',
    }),
    retention: duration('30d', { doc: 'ended runs and their output older than this are purged (by one instance at a time)' }, { minMs: 60_000 }),
    max_followers_per_run: integer(100, { doc: 'live output streams (SSE) of one run on one instance; one more is refused with 503 busy' }, positive),
    max_followers_per_user: integer(
      20,
      { doc: 'live output streams (SSE) of one user on one instance, all runs together; one more is refused with 503 busy' },
      positive,
    ),
    poll_interval: duration(
      '1s',
      { doc: 'how often an instance looks for queued runs, cancels of its runs and new output without a wake-up (and always, as the fallback)' },
      { minMs: 50 },
    ),
    wakeups: oneOf(['auto', 'poll', 'notify', 'redis'], 'auto', {
      doc: 'how instances tell each other of queued runs, freed places, cancels and output: notify (PostgreSQL LISTEN/NOTIFY), redis (publish/subscribe on redis.url), poll (runs.poll_interval alone); auto is notify on PostgreSQL, poll elsewhere',
      env: 'TKGATE_RUNS_WAKEUPS',
    }),
  },
  redis: {
    url: text('', { doc: 'Redis URL for runs.wakeups redis, e.g. redis://127.0.0.1:6379/0', env: 'TKGATE_REDIS_URL', sensitive: true }, redisUrl),
  },
  notifications: {
    sinks: structured(
      [],
      { doc: 'where run events are delivered: webhooks signed as Standard Webhooks, or Slack (docs/notifications.md)' },
      notificationSinkList,
      'a list of sinks, each an object with name, url, format (standard-webhooks or slack), secret, headers and timeout (docs/notifications.md)',
    ),
    max_attempts: integer(8, { doc: 'attempts of one delivery before it is failed' }, { min: 1, max: 50 }),
    give_up_after: duration('24h', { doc: 'a delivery not delivered this long after its event is failed' }, { minMs: 1_000 }),
    retry_base: duration(
      '10s',
      { doc: 'the wait before the second attempt; later waits grow from it (about 10s, 1m, 5m, 30m, 2h, 6h with the default), with jitter' },
      { minMs: 10 },
    ),
  },
  fleet: {
    inventory: structured(
      [],
      {
        doc: 'where fleet nodes come from: a list of { file }, { url, refresh, headers } and { command, refresh } sources (docs/fleet.md); the env variable names one file',
        env: 'TKGATE_FLEET_INVENTORY',
        sensitive: true,
      },
      inventorySourceList,
      'a list of sources, each { file: PATH }, { url: URL, refresh, headers } or { command: [argv], refresh } (docs/fleet.md)',
    ),
    known_hosts: optionalFile({ doc: "host keys of nodes that have none of their own, in OpenSSH's known_hosts format", env: 'TKGATE_FLEET_KNOWN_HOSTS' }),
    view_power: integer(-1, { doc: 'power that lists the nodes (GET {base}/fleet/nodes); -1: auth.admin_power', env: 'TKGATE_FLEET_VIEW_POWER' }),
  },
  toolkits: {
    dir: filePath('./config/toolkits', { doc: 'one file per toolkit (.yaml, .yml or .json)', env: 'TKGATE_TOOLKITS_DIR' }),
    watch: flag(true, { doc: 'hot reload', env: 'TKGATE_TOOLKITS_WATCH' }),
    settle: duration('300ms', { doc: 'quiet time before a change of the directory is applied, as one batch' }),
    rescan_interval: duration('5s', { doc: 'stat-only rescan for lost file events (0 = never)' }),
    max_file_bytes: integer(1_048_576, { doc: 'a larger toolkit file is refused' }, positive),
    on_invalid_at_start: oneOf(['last_good', 'skip', 'refuse'], 'last_good', {
      doc: "a toolkit file refused at start: last_good serves that toolkit's last good version recorded in the database, skip starts without it, refuse refuses to start",
      env: 'TKGATE_TOOLKITS_ON_INVALID_AT_START',
    }),
  },
  rate_limits: {
    store: oneOf(['database', 'redis'], 'database', {
      doc: 'where rate-limit budgets are counted: the database every gateway shares, or Redis (rate_limits.redis_url)',
      env: 'TKGATE_RATE_LIMITS_STORE',
    }),
    redis_url: text(
      '',
      { doc: 'Redis URL for rate_limits.store redis, e.g. redis://127.0.0.1:6379/0', env: 'TKGATE_RATE_LIMITS_REDIS_URL', sensitive: true },
      redisUrl,
    ),
    on_store_failure: oneOf(['deny', 'allow'], 'deny', {
      doc: 'when the store cannot answer: deny (503 unavailable with Retry-After) or allow (the call goes on, logged and counted)',
    }),
  },
  websocket: {
    max_per_user: integer(
      20,
      {
        doc: 'open WebSockets (endpoints with websocket: true) per user on one instance; one more is 429 too_many_sockets',
        env: 'TKGATE_WEBSOCKET_MAX_PER_USER',
      },
      positive,
    ),
  },
  plugins: stringList(DEFAULT_PLUGINS, { doc: 'endpoint-type plugins loaded at boot, in order' }, 'must be a list of module names or paths'),
  plugin_options: objectsByName({ doc: 'settings for plugins, keyed by plugin name (each plugin validates its own)' }),
  log: {
    level: oneOf(['error', 'warn', 'info', 'debug'] as const satisfies readonly LogLevel[], 'info', {
      doc: 'error, warn, info or debug',
      env: 'TKGATE_LOG_LEVEL',
    }),
    access: flag(true, { doc: 'one JSON line per request', env: 'TKGATE_LOG_ACCESS' }),
  },
  console: {
    enabled: flag(true, { doc: 'serve the web console at {base}/console/ (docs/console.md)', env: 'TKGATE_CONSOLE_ENABLED' }),
  },
  metrics: {
    enabled: flag(true, { doc: 'serve Prometheus metrics on a listener of their own', env: 'TKGATE_METRICS_ENABLED' }),
    host: text('127.0.0.1', { doc: 'metrics listen address', env: 'TKGATE_METRICS_HOST' }),
    port: port(9464, { doc: 'metrics listen port (0 = any free port; the chosen port is logged)', env: 'TKGATE_METRICS_PORT' }),
  },
  tracing: {
    enabled: flag(false, {
      doc: 'record OpenTelemetry spans and export them over OTLP/HTTP (trace context is propagated either way)',
      env: 'TKGATE_TRACING_ENABLED',
    }),
    endpoint: text('http://127.0.0.1:4318/v1/traces', { doc: 'the OTLP/HTTP traces URL of the collector', env: 'TKGATE_TRACING_ENDPOINT' }, (value) => {
      if (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol)) throw new Error('must be an http:// or https:// URL');
    }),
    sample_ratio: fraction(1, {
      doc: "share of new traces recorded (0 to 1); a request continuing a trace follows its caller's sampled flag",
      env: 'TKGATE_TRACING_SAMPLE_RATIO',
    }),
    service_name: text('tkgate', { doc: 'service.name of the spans', env: 'TKGATE_TRACING_SERVICE_NAME' }, (value) => {
      if (value.trim() === '') throw new Error('must not be empty');
    }),
  },
};

type AnySetting = Setting<unknown, string>;
interface Declaration {
  [key: string]: AnySetting | Declaration;
}

/** The normalised configuration: each setting's value under its key (plus its suffix, e.g. `_ms`). */
type Normalised<D> = {
  readonly [K in keyof D as D[K] extends Setting<unknown, infer S> ? `${K & string}${S}` : K]: D[K] extends Setting<infer T, string> ? T : Normalised<D[K]>;
};

export type ServerConfig = Normalised<typeof declaration> & {
  /** The configuration file given by --config or TKGATE_CONFIG (absolute), if any. */
  readonly file: string | undefined;
};

export interface LoadConfigOptions {
  /** --config FILE; falls back to TKGATE_CONFIG. */
  file?: string | undefined;
  /** Values from CLI flags, by key path (e.g. "server.port"); they win over everything. */
  overrides?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  /** Directory holding config/default.json; the working directory by default. */
  cwd?: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const isSetting = (node: AnySetting | Declaration): node is AnySetting => typeof (node as AnySetting).check === 'function';

function eachSetting(node: Declaration, visit: (key: string, setting: AnySetting) => void, prefix = ''): void {
  for (const [name, child] of Object.entries(node)) {
    if (isSetting(child)) visit(prefix + name, child);
    else eachSetting(child, visit, `${prefix}${name}.`);
  }
}

/**
 * Every setting a variable can carry has one: the name declared above (the documented short names such as
 * TKGATE_PORT), else TKGATE_ and the key path in capitals with `_` for `.` (toolkits.settle: TKGATE_TOOLKITS_SETTLE).
 * Objects taken whole (OIDC providers, plugin options) have none: their secrets have variables of their own.
 */
export const environmentNameOf = (key: string): string => `TKGATE_${key.toUpperCase().replaceAll('.', '_')}`;
eachSetting(declaration as Declaration, (key, setting) => {
  if (!setting.env && !setting.wholeObject) (setting as { env?: string }).env = environmentNameOf(key);
});

/**
 * convict's view of the declaration. Its defaults are null: convict coerces strings by the type of the
 * default (parseInt "8080abc" to 8080, "0" to true), so the settings' own defaults and checks apply after it.
 */
function convictSchema(node: Declaration): convict.Schema<unknown> {
  const schema: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(node)) {
    schema[name] = isSetting(child)
      ? {
          doc: child.doc,
          default: null,
          nullable: true,
          env: child.env,
          sensitive: child.sensitive,
          format: child.wholeObject ? (Array.isArray(child.default) ? Array : Object) : () => undefined,
        }
      : convictSchema(child);
  }
  return schema as convict.Schema<unknown>;
}

/** The environment variables the configuration reads: TKGATE_CONFIG and each setting's. */
export function configEnvironmentNames(): string[] {
  const names = ['TKGATE_CONFIG'];
  eachSetting(declaration, (_key, setting) => setting.env && names.push(setting.env));
  return names;
}

/** Environment strings read by their settings: a bad value stops the start naming the variable. */
function readEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  eachSetting(declaration, (key, setting) => {
    const raw = setting.env && env[setting.env];
    if (raw === undefined || raw === '' || !setting.env) return;
    try {
      const value = setting.fromEnv(raw);
      // Checked here as well as with the files' values, so a refusal names the variable, not only the key.
      setting.check(value);
      values[setting.env] = value;
    } catch (err) {
      if (err instanceof SettingProblem) throw new ConfigError(`invalid configuration: environment variable ${setting.env} (${key}.${err.at}): ${err.message}`);
      const shown = setting.sensitive ? '' : `, got ${JSON.stringify(raw)}`;
      throw new ConfigError(`invalid configuration: environment variable ${setting.env} (${key}): ${(err as Error).message}${shown}`);
    }
  });
  return values;
}

/** A configuration file, JSON or YAML by its extension; a key it has that is not declared is refused with its line and the nearest key. */
function readConfigFile(file: string): unknown {
  if (!existsSync(file)) throw new ConfigError(`config file ${file} does not exist`);
  const extension = path.extname(file).toLowerCase();
  if (!['.yaml', '.yml', '.json'].includes(extension)) throw new ConfigError(`config file ${file}: must end in .json, .yaml or .yml`);
  const source = parseSourceFile(readFileSync(file, 'utf8'), file);
  if ('syntax' in source) {
    const { message, position, hint } = source.syntax;
    throw new ConfigError(`invalid configuration: ${file}:${position.line}:${position.column}: ${message}${hint ? `; ${hint}` : ''}`);
  }
  const unknown = unknownKeys(source.document, declaration, []).map((at) => {
    const position = source.locate(at, true);
    const where = position ? `${file}:${position.line}:${position.column}` : file;
    const known = Object.keys(at.length > 1 ? (valueAt(declaration, at.slice(0, -1).join('.')) as Declaration) : declaration);
    const guess = nearest(at.at(-1)!, known);
    return `${where}: ${at.join('.')}: unknown key; ${guess ? `did you mean ${[...at.slice(0, -1), guess].join('.')}?` : `valid keys here: ${known.join(', ')}`}`;
  });
  if (unknown.length > 0) throw new ConfigError(`invalid configuration: ${unknown.join('; ')}`);
  return source.document ?? {};
}

/** The key paths of a configuration tree that the declaration does not have (a whole-object setting takes any keys). */
function unknownKeys(tree: unknown, node: Declaration, at: string[]): string[][] {
  if (tree === null || typeof tree !== 'object' || Array.isArray(tree)) return [];
  return Object.entries(tree).flatMap(([key, value]) => {
    const child = Object.hasOwn(node, key) ? node[key] : undefined;
    if (!child) return [[...at, key]];
    return isSetting(child) ? [] : unknownKeys(value, child, [...at, key]);
  });
}

function valueAt(tree: unknown, key: string): unknown {
  return key.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown> | null)?.[part], tree);
}

/** Every setting checked (all problems listed) and normalised into the shape of ServerConfig. */
function normalise(values: unknown, cwd: string): Normalised<typeof declaration> {
  const problems: string[] = [];
  const config: Record<string, unknown> = {};
  eachSetting(declaration, (key, setting) => {
    const value = valueAt(values, key) ?? setting.default;
    try {
      setting.check(value);
    } catch (err) {
      if (err instanceof SettingProblem) problems.push(`${key}.${err.at}: ${err.message}`);
      else problems.push(`${key}: ${(err as Error).message}${setting.sensitive ? '' : `: value was ${JSON.stringify(value)}`}`);
      return;
    }
    const parts = key.split('.');
    const parent = parts.slice(0, -1).reduce((node, part) => (node[part] ??= {}) as Record<string, unknown>, config);
    parent[parts.at(-1)! + setting.suffix] = setting.normalise(value, cwd);
  });
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return config as Normalised<typeof declaration>;
}

/** Loads, validates and normalises the server configuration; throws ConfigError with one line for all problems. */
export function loadServerConfig(options: LoadConfigOptions = {}): ServerConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const config = convict(convictSchema(declaration), { env: readEnvironment(env) as NodeJS.ProcessEnv, args: [] });
  const given = options.file ?? env.TKGATE_CONFIG;
  const file = given ? path.resolve(cwd, given) : undefined;
  try {
    const shipped = path.join(cwd, 'config', 'default.json');
    if (existsSync(shipped)) config.load(readConfigFile(shipped));
    if (file) config.load(readConfigFile(file));
    for (const [key, value] of Object.entries(options.overrides ?? {})) config.set(key, value);
    config.validate({ allowed: 'strict' });
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`invalid configuration: ${(err as Error).message.split('\n').join('; ')}`);
  }
  const normalised = normalise(config.getProperties(), cwd);
  // The URL schemes a database server's db.url may have (the first is the one messages name); none for SQLite's file.
  const schemes = dialectOf(normalised.db).urlSchemes;
  if (schemes.length > 0 && !normalised.db.url) {
    throw new ConfigError(`invalid configuration: db.url: must be set when db.client is ${normalised.db.client}`);
  }
  if (schemes.length > 0) {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(normalised.db.url)?.[1]?.toLowerCase();
    if (!scheme || !schemes.includes(scheme)) {
      throw new ConfigError(`invalid configuration: db.url: must start with ${schemes[0]}:// when db.client is ${normalised.db.client}`);
    }
  }
  if (normalised.rate_limits.store === 'redis' && !normalised.rate_limits.redis_url) {
    throw new ConfigError('invalid configuration: rate_limits.redis_url: must be set when rate_limits.store is redis');
  }
  // A run is lost when its heartbeat is older than lost_after: fewer than three heartbeats in that time, and one slow
  // write (a database hiccup, a loaded host) ends a healthy run lost and starts the next run of its key beside it.
  if (normalised.runs.lost_after_ms < 3 * normalised.runs.heartbeat_ms) {
    throw new ConfigError(
      `invalid configuration: runs.lost_after: must be at least 3 times runs.heartbeat (${normalised.runs.heartbeat_ms / 1000}s), so a run is not declared lost between two heartbeats`,
    );
  }
  if (normalised.runs.wakeups === 'redis' && !normalised.redis.url) {
    throw new ConfigError('invalid configuration: redis.url: must be set when runs.wakeups is redis');
  }
  if (normalised.runs.wakeups === 'notify' && !dialectOf(normalised.db).openListener) {
    throw new ConfigError('invalid configuration: runs.wakeups: notify needs db.client postgres (LISTEN/NOTIFY); use redis or poll');
  }
  if ((normalised.server.tls.cert === '') !== (normalised.server.tls.key === '')) {
    const missing = normalised.server.tls.cert === '' ? 'cert' : 'key';
    throw new ConfigError(`invalid configuration: server.tls.${missing}: must be set with server.tls.${missing === 'cert' ? 'key' : 'cert'} (both or neither)`);
  }
  const { providers, problems } = withClientSecrets(normalised.auth.oidc.providers, env);
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return { ...normalised, auth: { ...normalised.auth, oidc: { providers } }, file };
}

/** One row of docs/configuration.md. */
export interface ConfigurationEntry {
  key: string;
  env: string | undefined;
  /** As it would be written in a configuration file (JSON). */
  default: unknown;
  /** What a value may be, in the setting's own words (from the refusals of its check). */
  accepts: string;
  doc: string;
  sensitive: boolean;
}

/** Values no setting takes: each setting's refusal of them says what it does take. The second finds duration limits. */
const PROBES: unknown[] = [Symbol('probe'), '99999999h'];

/** Every setting, in declaration order: the source of docs/configuration.md (`npm run docs:config`). */
export function configurationReference(): ConfigurationEntry[] {
  const entries: ConfigurationEntry[] = [];
  eachSetting(declaration, (key, setting) => {
    const refusals = new Set<string>();
    for (const probe of PROBES) {
      try {
        setting.check(probe);
      } catch (err) {
        refusals.add((err as Error).message.replace(/^must be /, ''));
      }
    }
    entries.push({
      key,
      env: setting.env,
      default: setting.default,
      accepts: setting.accepts ?? [...refusals].join('; '),
      doc: setting.doc,
      sensitive: setting.sensitive === true,
    });
  });
  return entries;
}
