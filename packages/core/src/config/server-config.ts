/**
 * The server configuration (SPEC section 2): one convict schema, loaded from
 * built-in defaults < config/default.json < --config FILE (or TKGATE_CONFIG) < env vars < CLI flags.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import convict from 'convict';
import { parseDuration } from './duration.js';
import type { LogLevel } from '../log.js';

convict.addFormat({
  name: 'duration',
  validate(value: unknown) {
    parseDuration(value);
  },
  coerce: (value: string) => (/^\d+(\.\d+)?$/.test(value) ? Number(value) : value),
});

convict.addFormat({
  name: 'base-url',
  validate(value: unknown) {
    if (typeof value !== 'string' || !/^(\/[A-Za-z0-9._~-]+)*$/.test(value)) {
      throw new Error('must be empty or a path like "/api" (no trailing slash)');
    }
  },
});

convict.addFormat({
  name: 'module-list',
  validate(value: unknown) {
    if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string' || entry.length === 0)) {
      throw new Error('must be a list of module names or paths');
    }
  },
});

convict.addFormat({
  name: 'positive-int',
  validate(value: unknown) {
    if (!Number.isInteger(value) || (value as number) < 1) throw new Error('must be a whole number of at least 1');
  },
  coerce: (value: string) => Number(value),
});

convict.addFormat({
  name: 'workers',
  validate(value: unknown) {
    if (value !== 'auto' && (!Number.isInteger(value) || (value as number) < 1)) throw new Error('must be a whole number of at least 1, or "auto"');
  },
  coerce: (value: string) => (value === 'auto' ? value : Number(value)),
});

/** sessions.cache_ttl is the revocation bound across instances (SPEC section 8): at most 5 s. */
const MAX_CACHE_TTL_MS = 5_000;

convict.addFormat({
  name: 'cache-ttl',
  validate(value: unknown) {
    if (parseDuration(value) > MAX_CACHE_TTL_MS) throw new Error('must be at most 5s');
  },
  coerce: (value: string) => (/^\d+(\.\d+)?$/.test(value) ? Number(value) : value),
});

convict.addFormat({
  name: 'cors-origins',
  validate(value: unknown) {
    if (!Array.isArray(value)) throw new Error('must be a list of origins like "https://tools.example.org", or ["*"]');
    for (const origin of value) {
      if (origin === '*') {
        if (value.length > 1) throw new Error('"*" must be the only entry');
        continue;
      }
      if (typeof origin !== 'string' || !URL.canParse(origin) || new URL(origin).origin !== origin) {
        throw new Error(`${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path or trailing slash)`);
      }
    }
  },
});

const booleanFromEnv = (value: string) => value === 'true' || value === '1';

export const DEFAULT_PLUGINS = ['@tkgate/plugin-internal', '@tkgate/plugin-http', '@tkgate/plugin-exec'];

const schema = {
  server: {
    host: { doc: 'listen address', format: String, default: '127.0.0.1', env: 'TKGATE_HOST' },
    port: { doc: 'listen port (0 = any free port)', format: 'port', default: 8080, env: 'TKGATE_PORT' },
    base_url: { doc: 'prefix of every route', format: 'base-url', default: '/api', env: 'TKGATE_BASE_URL' },
    max_body_bytes: { doc: 'hard cap for any request body', format: 'positive-int', default: 1_048_576 },
    trust_proxy: {
      doc: 'take the client address from X-Forwarded-For',
      format: Boolean,
      default: false,
      env: 'TKGATE_TRUST_PROXY',
      coerce: booleanFromEnv,
    },
    workers: { doc: 'worker processes serving the port (node:cluster), or "auto": one per core', format: 'workers', default: 1, env: 'TKGATE_WORKERS' },
    cors: {
      origins: { doc: 'origins whose browser pages may call the gateway (exact, or ["*"]); [] sends no CORS header', format: 'cors-origins', default: [] as string[] },
    },
  },
  db: {
    client: { doc: 'sqlite or mysql', format: ['sqlite', 'mysql'], default: 'sqlite', env: 'TKGATE_DB_CLIENT' },
    filename: { doc: 'SQLite file', format: String, default: './data/tkgate.sqlite', env: 'TKGATE_DB_FILE' },
    url: { doc: 'MySQL/MariaDB URL', format: String, default: '', env: 'TKGATE_DB_URL', sensitive: true },
  },
  sessions: {
    idle_timeout: { doc: 'expiry after non-use', format: 'duration', default: '30m', env: 'TKGATE_IDLE_TIMEOUT' },
    absolute_lifetime: { doc: 'a session ends this long after login', format: 'duration', default: '24h' },
    max_per_user: { doc: 'concurrent sessions per user', format: 'positive-int', default: 5, env: 'TKGATE_MAX_SESSIONS' },
    cache_ttl: { doc: 'how long a process may trust what it read about a session (0 = not at all, at most 5s)', format: 'cache-ttl', default: '1s' },
    persist: {
      doc: 'store token hashes in the DB and reload them at start',
      format: Boolean,
      default: true,
      env: 'TKGATE_PERSIST_SESSIONS',
      coerce: booleanFromEnv,
    },
  },
  auth: {
    admin_power: { doc: 'power needed for clear-sessions', format: 'int', default: 100 },
    login_max_failures: { doc: 'failed logins per username + client IP within the window', format: 'positive-int', default: 10 },
    login_window: { doc: 'window of the failed-login limit', format: 'duration', default: '1m' },
  },
  toolkits: {
    dir: { doc: 'one file per toolkit', format: String, default: './config/toolkits', env: 'TKGATE_TOOLKITS_DIR' },
    watch: { doc: 'hot reload', format: Boolean, default: true, coerce: booleanFromEnv },
    settle: { doc: 'quiet time before a change of the directory is applied, as one batch', format: 'duration', default: '300ms' },
    rescan_interval: { doc: 'stat-only rescan for lost file events (0 = never)', format: 'duration', default: '5s' },
    max_file_bytes: { doc: 'a larger toolkit file is refused', format: 'positive-int', default: 1_048_576 },
  },
  plugins: { doc: 'endpoint-type plugins loaded at boot, in order', format: 'module-list', default: DEFAULT_PLUGINS },
  plugin_options: { doc: "settings for plugins, keyed by plugin name (each plugin validates its own)", format: Object, default: {} },
  log: {
    level: { doc: 'error, warn, info or debug', format: ['error', 'warn', 'info', 'debug'], default: 'info', env: 'TKGATE_LOG_LEVEL' },
  },
};

/** The configuration as convict holds it: durations still as written. */
interface RawConfig {
  server: Omit<ServerConfig['server'], 'workers'> & { workers: number | 'auto' };
  db: { client: string; filename: string; url: string };
  sessions: { idle_timeout: string | number; absolute_lifetime: string | number; max_per_user: number; cache_ttl: string | number; persist: boolean };
  auth: { admin_power: number; login_max_failures: number; login_window: string | number };
  toolkits: { dir: string; watch: boolean; settle: string | number; rescan_interval: string | number; max_file_bytes: number };
  plugins: string[];
  plugin_options: Record<string, Record<string, unknown>>;
  log: { level: string };
}

export interface ServerConfig {
  server: { host: string; port: number; base_url: string; max_body_bytes: number; trust_proxy: boolean; workers: number; cors: { origins: string[] } };
  db: { client: 'sqlite' | 'mysql'; filename: string; url: string };
  sessions: { idle_timeout_ms: number; absolute_lifetime_ms: number; max_per_user: number; cache_ttl_ms: number; persist: boolean };
  auth: { admin_power: number; login_max_failures: number; login_window_ms: number };
  toolkits: { dir: string; watch: boolean; settle_ms: number; rescan_interval_ms: number; max_file_bytes: number };
  plugins: string[];
  plugin_options: Record<string, Record<string, unknown>>;
  log: { level: LogLevel };
}

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

/** Loads, validates and normalises the server configuration; throws ConfigError with one line per problem. */
export function loadServerConfig(options: LoadConfigOptions = {}): ServerConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const config = convict<RawConfig>(schema as convict.Schema<RawConfig>, { env, args: [] });
  try {
    const shipped = path.join(cwd, 'config', 'default.json');
    if (existsSync(shipped)) config.loadFile(shipped);
    const file = options.file ?? env.TKGATE_CONFIG;
    if (file) {
      if (!existsSync(file)) throw new ConfigError(`config file ${file} does not exist`);
      config.loadFile(file);
    }
    for (const [key, value] of Object.entries(options.overrides ?? {})) config.set(key, value);
    config.validate({ allowed: 'strict' });
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`invalid configuration: ${(err as Error).message.split('\n').join('; ')}`);
  }
  const raw = config.getProperties();
  if (raw.db.client === 'mysql' && !raw.db.url) {
    throw new ConfigError('invalid configuration: db.url: must be set when db.client is mysql');
  }
  for (const [plugin, options] of Object.entries(raw.plugin_options)) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new ConfigError(`invalid configuration: plugin_options.${plugin}: must be an object of that plugin's settings`);
    }
  }
  return normalise(raw, cwd);
}

function normalise(raw: RawConfig, cwd: string): ServerConfig {
  return {
    server: {
      ...raw.server,
      workers: raw.server.workers === 'auto' ? availableParallelism() : raw.server.workers,
      cors: { origins: [...raw.server.cors.origins] },
    },
    db: { client: raw.db.client as 'sqlite' | 'mysql', filename: path.resolve(cwd, raw.db.filename), url: raw.db.url },
    sessions: {
      idle_timeout_ms: parseDuration(raw.sessions.idle_timeout),
      absolute_lifetime_ms: parseDuration(raw.sessions.absolute_lifetime),
      max_per_user: raw.sessions.max_per_user,
      cache_ttl_ms: parseDuration(raw.sessions.cache_ttl),
      persist: raw.sessions.persist,
    },
    auth: {
      admin_power: raw.auth.admin_power,
      login_max_failures: raw.auth.login_max_failures,
      login_window_ms: parseDuration(raw.auth.login_window),
    },
    toolkits: {
      dir: path.resolve(cwd, raw.toolkits.dir),
      watch: raw.toolkits.watch,
      settle_ms: parseDuration(raw.toolkits.settle),
      rescan_interval_ms: parseDuration(raw.toolkits.rescan_interval),
      max_file_bytes: raw.toolkits.max_file_bytes,
    },
    plugins: [...raw.plugins],
    plugin_options: raw.plugin_options,
    log: { level: raw.log.level as LogLevel },
  };
}

