// Scenario 8 of `npm run bench`: what a rate limit costs. Scenario 2's internal endpoint with a limit far
// above the load (so every call is counted and admitted), on the database store (the bench's SQLite file)
// and on Redis (BENCH_REDIS_URL, default the local one; its row is left out when Redis does not answer),
// against the same endpoint without a limit on the same gateway.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ITEMS_ENDPOINT, login, startTkgate } from './tkgate.js';

const LIMITED = { ...ITEMS_ENDPOINT, path: 'items-limited', rate_limit: { limit: 1_000_000_000, window: '1h', per: 'user' } };

/** Whether something answers at the URL's host and port within a second. */
function reachable(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 6379), timeout: 1000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/**
 * The scenario's rows, built by run.js's `tkgate(name, gateway, load)`: two gateways on the bench's
 * configuration with a toolkit of their own (the endpoint with and without a limit), one per store.
 */
export async function rateLimitEntries(dir, config, track, tkgate) {
  const toolkits = path.join(dir, 'toolkits-rate-limits');
  mkdirSync(toolkits, { recursive: true });
  writeFileSync(path.join(toolkits, 'bench.json'), JSON.stringify({ name: 'bench', type: 'app', endpoints: [ITEMS_ENDPOINT, LIMITED] }));
  const settings = JSON.parse(readFileSync(config, 'utf8'));
  const configWith = (name, rateLimits) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify({ ...settings, toolkits: { ...settings.toolkits, dir: toolkits }, rate_limits: rateLimits }));
    return file;
  };
  const onDatabase = track(await startTkgate(configWith('tkgate-rate-database.json', { store: 'database' })));
  const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
  const onRedis = (await reachable(redisUrl))
    ? track(await startTkgate(configWith('tkgate-rate-redis.json', { store: 'redis', redis_url: redisUrl })))
    : undefined;
  const auth = async (gateway) => ({ authorization: `Bearer ${await login(gateway.base)}` });
  const databaseAuth = await auth(onDatabase);
  const redisAuth = onRedis && (await auth(onRedis));
  return {
    entries: [
      tkgate('limit, database store', onDatabase, { url: '/tk/app/bench/items-limited?q=disk', headers: databaseAuth }),
      onRedis && tkgate('limit, Redis store', onRedis, { url: '/tk/app/bench/items-limited?q=disk', headers: redisAuth }),
      tkgate('no limit', onDatabase, { url: '/tk/app/bench/items?q=disk', headers: databaseAuth }),
    ],
    stop: async () => {
      await onDatabase.stop();
      await onRedis?.stop();
    },
  };
}
