// Baseline of scenario 14: the simplest WebSocket relay a user could write with `ws` instead of tkgate, no auth:
// each upgrade connects to the upstream, then completes the client's handshake and relays messages both ways
// (pausing a side while the other's queue is full), closing one side when the other closes.
import http from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';

const upstream = `ws://127.0.0.1:${process.env.UPSTREAM_PORT}/live`;
const HIGH_WATER = 1024 * 1024;
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });

function relay(from, to) {
  from.on('message', (data, isBinary) => {
    if (to.readyState !== WebSocket.OPEN) return;
    to.send(data, { binary: isBinary }, () => to.bufferedAmount < HIGH_WATER && from.isPaused && from.resume());
    if (to.bufferedAmount >= HIGH_WATER) from.pause();
  });
  from.on('close', () => to.readyState === WebSocket.OPEN && to.close());
  from.on('error', () => to.terminate());
}

const server = http.createServer((_req, res) => res.writeHead(426).end());
server.on('upgrade', (req, socket, head) => {
  socket.on('error', () => socket.destroy());
  const far = new WebSocket(upstream, { perMessageDeflate: false });
  far.once('error', () => socket.destroy());
  far.once('open', () =>
    wss.handleUpgrade(req, socket, head, (near) => {
      relay(near, far);
      relay(far, near);
    }),
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
