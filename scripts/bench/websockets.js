// Scenario 14 of run.js: memory per idle relayed WebSocket. `count` idle sockets through tkgate (websocket: true,
// authenticated) and through a bare `ws` relay (servers/ws-relay.js, no auth) to one `ws` upstream, one target
// after the other: each target's RSS settled before and with the sockets open, per socket pair (client side and
// upstream side). The clients live in the bench process. A process here may hold 20,000 descriptors (ulimit -n,
// not raisable in this container), so a full run opens 9,900 pairs: 19,800 descriptors in the relay.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WebSocket } from 'ws';
import { login, startTkgate } from './tkgate.js';

/** Opens `count` sockets to `url`, at most 100 handshakes at once; resolves to them all. */
export async function openSockets(url, count, headers = {}) {
  const sockets = [];
  let next = 0;
  const one = () =>
    new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers, perMessageDeflate: false });
      socket.once('open', () => resolve(socket));
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) => reject(new Error(`${url}: upgrade refused ${res.statusCode}`)));
    });
  const worker = async () => {
    while (next < count) {
      next++;
      sockets.push(await one());
    }
  };
  await Promise.all(Array.from({ length: 100 }, worker));
  return sockets;
}

export async function closeSockets(sockets) {
  await Promise.all(sockets.map((socket) => new Promise((resolve) => (socket.once('close', resolve), socket.terminate()))));
}

/** One target's figures: settled RSS empty and with `count` sockets open, and per pair in KB. */
async function measure(name, pid, url, count, headers, settledRss, log) {
  const empty = await settledRss(pid);
  const sockets = await openSockets(url, count, headers);
  const full = await settledRss(pid);
  log(`  ${name}: ${count} sockets, ${(full - empty).toFixed(1)} MB (${(((full - empty) * 1024) / count).toFixed(1)} KB per pair)\n`);
  await closeSockets(sockets);
  return {
    name,
    sockets: count,
    rss_before_mb: Number(empty.toFixed(1)),
    rss_growth_mb: Number((full - empty).toFixed(1)),
    kb_per_pair: Number((((full - empty) * 1024) / count).toFixed(1)),
    rss_open_mb: Number(full.toFixed(1)),
  };
}

/** The bench gateway's config with one idle WebSocket endpoint (tk/app/dash/live) to the upstream, for `count` sockets. */
export function websocketConfig(dir, config, upstreamPort, count) {
  const toolkits = path.join(dir, 'websocket-toolkits');
  mkdirSync(toolkits, { recursive: true });
  const endpoint = {
    path: 'live',
    method: 'GET',
    type: 'http',
    websocket: true,
    idle_timeout: '1h',
    upstream: { url: `ws://127.0.0.1:${upstreamPort}/live` },
  };
  writeFileSync(path.join(toolkits, 'dash.json'), JSON.stringify({ name: 'dash', type: 'app', endpoints: [endpoint] }));
  const written = JSON.parse(readFileSync(config, 'utf8'));
  written.toolkits = { ...written.toolkits, dir: toolkits };
  written.websocket = { max_per_user: count + 100 };
  const file = config.replace(/\.json$/, '-websockets.json');
  writeFileSync(file, JSON.stringify(written, null, 2));
  return file;
}

/** The scenario's rows (tkgate first), measured in this run. */
export async function websocketMemoryRows({ dir, config, count, track, startServer, settledRss, log }) {
  const upstream = await startServer('ws-upstream.js');
  const relay = await startServer('ws-relay.js', { UPSTREAM_PORT: String(upstream.port) });
  const gateway = track(await startTkgate(websocketConfig(dir, config, upstream.port, count)));
  try {
    const auth = { authorization: `Bearer ${await login(gateway.base)}` };
    const bare = await measure('bare ws relay (no auth)', relay.pid, `ws://127.0.0.1:${relay.port}/live`, count, {}, settledRss, log);
    const tkgate = await measure('tkgate', gateway.pid, `${gateway.base.replace(/^http/, 'ws')}/tk/app/dash/live`, count, auth, settledRss, log);
    return [tkgate, bare];
  } finally {
    await gateway.stop();
    await relay.stop();
    await upstream.stop();
  }
}
