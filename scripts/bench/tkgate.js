// The gateway under test: the real tkgate binary on a fresh SQLite file, with one toolkit holding one
// endpoint per scenario, a bench user with 10 items and a profile.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import { startProcess } from './processes.js';

const tkgateBin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/cli/dist/main.js');
export const BENCH_USER = { username: 'bench', password: 'bench-password-1' };
/** Logs in over and over in the storm; its own user, so its evictions never touch the bench user's session. */
export const STORM_USER = { username: 'storm', password: 'storm-password-1' };

/** Scenario 2's internal endpoint: client_filter, one inject_db_context, a pseudo select (scenario 8 limits a copy). */
export const ITEMS_ENDPOINT = {
  path: 'items',
  method: 'GET',
  type: 'internal',
  client_filter: { allowed_fields: ['q'], field_rules: { q: { type: 'string', max_length: 20 } } },
  inject_db_context: ['profiles.email'],
  pseudo_querys: [{ select: 'items', columns: ['id', 'title', 'status'], where: { owner_id: '$context.user_id' }, order_by: 'id', limit: 10 }],
};

/**
 * Scenario 10's list endpoint: scenario 2's, with two optional filters, a limit, an offset and an order
 * chosen by the caller (its SQL compiled per shape of request at load, not per request).
 */
export const PAGED_ENDPOINT = {
  ...ITEMS_ENDPOINT,
  path: 'items-page',
  client_filter: { allowed_fields: ['q', 'status', 'title', 'sort', 'limit', 'offset'], field_rules: { q: { type: 'string', max_length: 20 } } },
  pseudo_querys: [
    {
      select: 'items',
      columns: ['id', 'title', 'status'],
      where: {
        owner_id: '$context.user_id',
        status: { '=': '$payload.status', optional: true },
        title: { like: { prefix: '$payload.title' }, optional: true },
      },
      order_by: { from: '$payload.sort', allowed: ['id', 'title'], default: 'id' },
      limit: { from: '$payload.limit', max: 50, default: 10 },
      offset: { from: '$payload.offset', default: 0 },
    },
  ],
};

function toolkit(upstreamPort, tinyScript, targetPorts = []) {
  // Scenario 12: the json call balanced over several upstreams (upstream.targets), beside the single-URL one.
  const balanced =
    targetPorts.length > 1
      ? [{ path: 'json-balanced', method: 'POST', type: 'http', upstream: { targets: targetPorts.map((port) => `http://127.0.0.1:${port}/json`) } }]
      : [];
  return {
    name: 'bench',
    type: 'app',
    endpoints: [
      ITEMS_ENDPOINT,
      PAGED_ENDPOINT,
      { path: 'json', method: 'POST', type: 'http', upstream: { url: `http://127.0.0.1:${upstreamPort}/json` } },
      // The same GET as an exact path and as a template (instructions.js exact-path, template-path: scenario 14's
      // two gateways in one, counted steadily).
      { path: 'hosts/web-1/services/api', method: 'GET', type: 'http', upstream: { url: `http://127.0.0.1:${upstreamPort}/json` } },
      { path: 'hosts/{host}/services/{service}', method: 'GET', type: 'http', upstream: { url: `http://127.0.0.1:${upstreamPort}/json` } },
      // The client's GET itself forwarded (scenario 15), to the same answer as json's context POST.
      { path: 'forwarded', method: 'GET', type: 'http', upstream: { url: `http://127.0.0.1:${upstreamPort}/json`, forward: 'request' } },
      ...balanced,
      { path: 'file', method: 'GET', type: 'http', upstream: { url: `http://127.0.0.1:${upstreamPort}/1mb`, passthrough: true } },
      { path: 'tiny', method: 'GET', type: 'exec', command: [tinyScript], max_concurrency: 16, max_queue: 256 },
    ],
  };
}

export function writeTinyScript(dir) {
  const script = path.join(dir, 'tiny.sh');
  writeFileSync(script, '#!/bin/sh\necho \'{"ok":true}\'\n');
  chmodSync(script, 0o755);
  return script;
}

/** Creates the database, its tables and the bench user; returns the gateway's config file. */
export async function prepareGateway(dir, { upstreamPort, tinyScript, targetPorts }) {
  const filename = path.join(dir, 'tkgate.sqlite');
  const db = openDatabase({ client: 'sqlite', filename, url: '' });
  try {
    await migrateToLatest(db);
    const userId = await addUser(db, { ...BENCH_USER, power: 100 });
    await addUser(db, STORM_USER);
    await db.schema.createTable('profiles', (table) => {
      table.increments('id');
      table.integer('user_id').notNullable().index();
      table.string('email').notNullable();
    });
    await db.schema.createTable('items', (table) => {
      table.increments('id');
      table.integer('owner_id').notNullable().index();
      table.string('title').notNullable();
      table.string('status').notNullable();
    });
    await db('profiles').insert({ user_id: userId, email: 'bench@example.org' });
    await db('items').insert(Array.from({ length: 10 }, (_, i) => ({ owner_id: userId, title: `item ${i + 1}`, status: 'open' })));
  } finally {
    await db.destroy();
  }
  const toolkits = path.join(dir, 'toolkits');
  mkdirSync(toolkits, { recursive: true });
  writeFileSync(path.join(toolkits, 'bench.json'), JSON.stringify(toolkit(upstreamPort, tinyScript, targetPorts), null, 2));
  const settings = (transport) =>
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      db: { client: 'sqlite', filename },
      sessions: { max_per_user: 200 },
      auth: { login_max_failures: 1_000_000 },
      toolkits: { dir: toolkits, watch: false },
      plugin_options: {
        '@tkgate/plugin-exec': {
          max_processes: 16,
          max_queue: 1024,
          spawn_helpers: Number(process.env.BENCH_SPAWN_HELPERS ?? 2),
          spawner: process.env.BENCH_SPAWNER ?? 'auto',
        },
        '@tkgate/plugin-http': { transport },
      },
      log: { level: 'warn' },
      metrics: { port: 0 },
    });
  const config = path.join(dir, 'tkgate.json');
  writeFileSync(config, settings('undici'));
  return { config, filename };
}

/**
 * A bench gateway's tkgate.json in `dir`: on 127.0.0.1 and a free port, the database and toolkits given, warnings
 * only and no access lines, no metrics listener; `extra` adds or replaces top-level sections. Returns its path.
 */
export function writeBenchConfig(dir, { db, toolkits, ...extra }) {
  const file = path.join(dir, 'tkgate.json');
  writeFileSync(
    file,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      db,
      toolkits: { dir: toolkits, watch: false },
      log: { level: 'warn', access: false },
      metrics: { enabled: false },
      ...extra,
    }),
  );
  return file;
}

/** A gateway on `config`; `bin` is another checkout's CLI (npm run bench -- --compare DIR). */
export async function startTkgate(config, extraArgs = [], env = {}, bin = tkgateBin) {
  const gateway = await startProcess(process.execPath, [...extraArgs, bin, 'start', '--config', config], {
    env: { TKGATE_LOG_LEVEL: 'info', ...env },
    // In the build's own checkout: the default plugins are resolved from the working directory, and a
    // --compare build (an older checkout) needs its own plugins, whose plugin API it has.
    cwd: path.resolve(bin, '../../../..'),
    ready: (line) => line.includes('"msg":"listening"'),
    // Scenario 12's gateways load 500 toolkits first, on a machine others may be loading too.
    timeoutMs: 90_000,
  });
  const { port } = JSON.parse(gateway.line);
  return { ...gateway, base: `http://127.0.0.1:${port}/api` };
}

/** An API key of the bench user, made with its session (POST {base}/auth/api-keys): the same caller, another credential. */
export async function apiKey(base, token) {
  const response = await fetch(`${base}/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench' }),
  });
  const body = await response.json();
  if (!body.success) throw new Error(`bench api key not created: ${JSON.stringify(body)}`);
  return body.data.key;
}

export async function login(base) {
  const response = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BENCH_USER),
  });
  const body = await response.json();
  if (!body.success) throw new Error(`bench login failed: ${JSON.stringify(body)}`);
  return body.data.token;
}
