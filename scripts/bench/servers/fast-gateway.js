// Peer: fast-gateway 5 doing tkgate's job in its own idiom: a bearer token checked in a Map (the
// cheapest session check there is), then GET /api/auth/status answered in the gateway and POST /json
// proxied to the upstream. PORT, UPSTREAM_PORT and TOKEN come from the environment.
import { randomUUID } from 'node:crypto';
import { requirePeer } from '../peers.js';

const gateway = requirePeer('fast-gateway');
const sessions = new Map([[process.env.TOKEN, { id: 1, username: 'bench', power: 100 }]]);

function checkToken(req, res, next) {
  const user = sessions.get((req.headers.authorization ?? '').slice('Bearer '.length));
  if (!user) {
    res.statusCode = 401;
    res.setHeader('content-type', 'application/json');
    return res.end('{"success":false,"error":{"code":"unauthorized"}}');
  }
  req.user = user;
  return next();
}

const server = gateway({
  middlewares: [checkToken],
  routes: [{ prefix: '/json', pathRegex: '', prefixRewrite: '/json', target: `http://127.0.0.1:${process.env.UPSTREAM_PORT}`, methods: ['POST'] }],
});
server.get('/api/auth/status', (req, res) => {
  const now = new Date().toISOString();
  const requestId = randomUUID();
  res.setHeader('content-type', 'application/json');
  res.setHeader('x-request-id', requestId);
  res.end(
    JSON.stringify({
      success: true,
      request_id: requestId,
      endpoint: req.url,
      data: { active: true, user: req.user, created_at: now, last_used_at: now, expires_at: now },
    }),
  );
});
await server.start(Number(process.env.PORT), '127.0.0.1');
process.stdout.write(`ready ${process.env.PORT}\n`);
