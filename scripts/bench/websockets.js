// Scenario 16 of run.js: memory per idle relayed WebSocket. `count` idle sockets through tkgate (websocket: true,
// authenticated) and through a bare `ws` relay (servers/ws-relay.js, no auth) to one `ws` upstream, one target
// after the other: each target's RSS before and with the sockets open, settled and after a full collection, per
// socket pair (client side and upstream side). The clients live in the bench process. A process here may hold 20,000 descriptors (ulimit -n,
// not raisable in this container), so a full run opens 9,900 pairs: 19,800 descriptors in the relay.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { rssMb, sleep } from './processes.js';
import { startWebsocketRelays } from './websocket-relays.js';

const here = path.dirname(fileURLToPath(import.meta.url));

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

/** Makes `proc` (started with collect-on-signal.js) collect all its garbage; resolves once it has. */
async function collectGarbage(proc) {
  const n = (proc.collections = (proc.collections ?? 0) + 1);
  process.kill(proc.pid, 'SIGUSR2');
  for (let waited = 0; !proc.output().includes(`collected ${n}\n`); waited += 50) {
    if (waited > 30_000) throw new Error(`pid ${proc.pid} did not collect its garbage within 30 s`);
    await sleep(50);
  }
}

/** RSS in MB after a full collection: the lowest of a few readings, while the freed pages go back. */
async function collectedRss(proc) {
  await collectGarbage(proc);
  let lowest = Infinity;
  for (let i = 0; i < 8; i++) {
    await sleep(250);
    lowest = Math.min(lowest, rssMb(proc.pid));
  }
  return lowest;
}

/**
 * One target's figures, per pair in KB: RSS settled (V8 collecting when it will: garbage of the handshakes not yet
 * collected is in it, by chance more or less) and RSS after a full collection in the target (what the open
 * sockets hold), each against the same reading with no socket open.
 */
async function measure(name, proc, url, count, headers, settledRss, log) {
  // Collected first: a collection between the two settled readings would count its own release against them.
  const emptyCollected = await collectedRss(proc);
  const empty = await settledRss(proc.pid);
  const sockets = await openSockets(url, count, headers);
  const full = await settledRss(proc.pid);
  const fullCollected = await collectedRss(proc);
  const perPair = (mb) => Number(((mb * 1024) / count).toFixed(1));
  log(
    `  ${name}: ${count} sockets, ${(full - empty).toFixed(1)} MB settled (${perPair(full - empty)} KB per pair), ` +
      `${(fullCollected - emptyCollected).toFixed(1)} MB after a full collection (${perPair(fullCollected - emptyCollected)} KB per pair)\n`,
  );
  await closeSockets(sockets);
  return {
    name,
    sockets: count,
    rss_before_mb: Number(empty.toFixed(1)),
    rss_growth_mb: Number((full - empty).toFixed(1)),
    kb_per_pair: perPair(full - empty),
    kb_per_pair_collected: perPair(fullCollected - emptyCollected),
    rss_open_mb: Number(full.toFixed(1)),
  };
}

/** The scenario's rows (tkgate first), measured in this run; both relays run collect-on-signal.js. */
export async function websocketMemoryRows({ dir, config, count, track, startServer, settledRss, log }) {
  const { gateway, relay, tkgateUrl, relayUrl, auth, stop } = await startWebsocketRelays({
    dir,
    config,
    name: 'websockets',
    maxPerUser: count + 100,
    track,
    startServer,
    nodeArgs: ['--import', path.join(here, 'collect-on-signal.js')],
  });
  try {
    const bare = await measure('bare ws relay (no auth)', relay, relayUrl, count, {}, settledRss, log);
    const tkgate = await measure('tkgate', gateway, tkgateUrl, count, auth, settledRss, log);
    return [tkgate, bare];
  } finally {
    await stop();
  }
}
