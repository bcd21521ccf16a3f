/**
 * One upstream target of test/http/upstream-targets.test.ts, as a child process the test can kill:
 * `node targets-upstream.js <name> <mode> <delayMs> <health>`. Mode `normal` answers every call after
 * `delayMs` (4 s when its body says `"hold":true`) with `{"target": name}` (and relays WebSockets as `name:message`); `silent` accepts and never
 * answers. /healthz answers 200, or 503 while sick (POST /control/sick and /control/healthy switch it). Every
 * call is printed on stdout as it arrives (its X-Request-Id, method and path), so that the test counts what each
 * target heard even after killing it. The first line is `{"port": N}`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

const [name = 'target', mode = 'normal', delay = '0', health = 'ok'] = process.argv.slice(2);
const delayMs = Number(delay);
let healthy = health === 'ok';

const server = http.createServer((req, res) => {
  const path = req.url ?? '/';
  if (path === '/control/sick' || path === '/control/healthy') {
    healthy = path === '/control/healthy';
    return void res.end('{}');
  }
  if (path === '/healthz') {
    res.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ healthy }));
  }
  process.stdout.write(`${JSON.stringify({ id: req.headers['x-request-id'], method: req.method, path })}\n`);
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  if (mode === 'silent') return;
  req.on('end', () => {
    // A call whose payload says hold is held 4 s: a call in flight for as long as the test needs one.
    const hold = Buffer.concat(chunks).toString('utf8').includes('"hold":true');
    setTimeout(
      () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ target: name }));
      },
      hold ? 4000 : delayMs,
    );
  });
});
const sockets = new WebSocketServer({ server });
sockets.on('connection', (socket, req) => {
  process.stdout.write(`${JSON.stringify({ id: req.headers['x-request-id'], method: 'WS', path: req.url })}\n`);
  socket.on('message', (data) => socket.send(`${name}:${String(data)}`));
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
