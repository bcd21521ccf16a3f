// Baseline: bare-koa.js's answer written with node:http alone (no Koa): what Node's HTTP costs by itself.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

const server = http.createServer((req, res) => {
  const requestId = randomUUID();
  const now = new Date().toISOString();
  const data = { active: true, user: { id: 1, username: 'bench', power: 100 }, created_at: now, last_used_at: now, expires_at: now };
  const body = JSON.stringify({ success: true, request_id: requestId, endpoint: req.url, data });
  res.writeHead(200, { 'X-Request-Id': requestId, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
