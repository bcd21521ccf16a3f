// Scenario 14 of run.js: memory per idle relayed WebSocket. `count` idle sockets through tkgate (websocket: true,
// authenticated) and through a bare `ws` relay (servers/ws-relay.js, no auth) to one `ws` upstream, one target
// after the other: each target's RSS settled before and with the sockets open, per socket pair (client side and
// upstream side). The clients live in the bench process. A process here may hold 20,000 descriptors (ulimit -n,
// not raisable in this container), so a full run opens 9,900 pairs: 19,800 descriptors in the relay.
import { WebSocket } from 'ws';
import { startWebsocketRelays } from './websocket-relays.js';

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

/** The scenario's rows (tkgate first), measured in this run. */
export async function websocketMemoryRows({ dir, config, count, track, startServer, settledRss, log }) {
  const { gateway, relay, tkgateUrl, relayUrl, auth, stop } = await startWebsocketRelays({
    dir,
    config,
    name: 'websockets',
    maxPerUser: count + 100,
    track,
    startServer,
  });
  try {
    const bare = await measure('bare ws relay (no auth)', relay.pid, relayUrl, count, {}, settledRss, log);
    const tkgate = await measure('tkgate', gateway.pid, tkgateUrl, count, auth, settledRss, log);
    return [tkgate, bare];
  } finally {
    await stop();
  }
}
