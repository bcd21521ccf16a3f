// Scenario 17 of run.js (a WebSocket message relayed, measured as scenarios 1, 3, 12 and 15 are): 50
// client sockets each send a small text message and the next as soon as its echo comes back, through tkgate's
// `websocket: true` endpoint and through a bare `ws` relay (servers/ws-relay.js, no auth), to one `ws` echo upstream
// (servers/ws-upstream.js); the relay's CPU per message (from /proc, its process tree) and the p99 round trip, in
// interleaved rounds with measure.js's foreign-load detection. The sockets are opened once per target, before its
// first window (handshakes are not messages), and live in the bench process, whose CPU measure.js counts as the
// bench's own, not foreign; a socket that closes or fails in a window counts as an error.
import { WebSocket } from 'ws';
import { startWebsocketRelays } from './websocket-relays.js';

/** A small text message, as a dashboard or a chat sends. */
const MESSAGE = JSON.stringify({ type: 'ping', text: 'x'.repeat(40) });
/** How long a window waits for the echoes still on their way once it stops sending. */
const LAST_ECHO_TIMEOUT_MS = 10_000;

function openSocket(url, headers) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`${url}: upgrade refused ${res.statusCode}`)));
  });
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] : NaN);

/**
 * A load of ping-pong messages on `count` sockets to `url`, opened on first use: `run({ durationS })` resolves to
 * runLoad's shape ({ rps: echoes per second, p50, p99 in ms, errors, non2xx: 0 }).
 */
export function messageLoad(url, count, headers = {}) {
  let sockets;
  const run = async ({ durationS }) => {
    sockets ??= await Promise.all(Array.from({ length: count }, () => openSocket(url, headers)));
    const rtts = [];
    let errors = 0;
    const started = performance.now();
    const deadline = started + durationS * 1000;
    await Promise.all(
      sockets.map(
        (socket) =>
          new Promise((resolve) => {
            let sentAt = 0;
            const finish = () => {
              clearTimeout(timer);
              socket.off('message', onMessage);
              socket.off('close', onClose);
              resolve();
            };
            const send = () => {
              sentAt = performance.now();
              socket.send(MESSAGE);
            };
            const onMessage = () => {
              const now = performance.now();
              rtts.push(now - sentAt);
              if (now < deadline) send();
              else finish();
            };
            const onClose = () => {
              errors++;
              finish();
            };
            const timer = setTimeout(() => (errors++, finish()), durationS * 1000 + LAST_ECHO_TIMEOUT_MS);
            socket.on('message', onMessage);
            socket.once('close', onClose);
            if (socket.readyState !== WebSocket.OPEN) return onClose();
            send();
          }),
      ),
    );
    const elapsedS = (performance.now() - started) / 1000;
    sockets = sockets.filter((socket) => socket.readyState === WebSocket.OPEN);
    rtts.sort((a, b) => a - b);
    return { rps: rtts.length / elapsedS, p50: percentile(rtts, 50), p99: percentile(rtts, 99), errors, non2xx: 0 };
  };
  const close = () => Promise.all((sockets ?? []).map((socket) => new Promise((resolve) => (socket.once('close', resolve), socket.terminate()))));
  return { run, close };
}

/** The scenario's entries (tkgate first) for measureInterleaved, on a gateway of their own; `stop()` ends them. */
export async function websocketMessageEntries({ dir, config, connections, track, startServer }) {
  const relays = await startWebsocketRelays({ dir, config, name: 'websocket-messages', maxPerUser: connections + 10, track, startServer });
  const throughTkgate = messageLoad(relays.tkgateUrl, connections, relays.auth);
  const throughRelay = messageLoad(relays.relayUrl, connections);
  // The load's url is only a label here: each entry's `run` drives its own sockets.
  const entry = (name, proc, load) => ({ name, load: { url: name }, run: load.run, pids: () => [proc.pid] });
  return {
    entries: [entry('tkgate (websocket: true)', relays.gateway, throughTkgate), entry('bare ws relay (no auth)', relays.relay, throughRelay)],
    stop: async () => {
      await Promise.all([throughTkgate.close(), throughRelay.close()]);
      await relays.stop();
    },
  };
}
