// Baseline: the simplest thing a user could run instead of tkgate — a bare Koa app answering the same
// JSON envelopes as the gateway's status and internal endpoints, with no auth, no database.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';

const app = new Koa();
app.use(async (ctx) => {
  const requestId = randomUUID();
  ctx.set('X-Request-Id', requestId);
  const now = new Date().toISOString();
  const data = ctx.path.endsWith('/status')
    ? { active: true, user: { id: 1, username: 'bench', power: 100 }, created_at: now, last_used_at: now, expires_at: now }
    : [
        { id: 1, title: 'item 1', status: 'open' },
        { id: 2, title: 'item 2', status: 'open' },
      ];
  ctx.body = { success: true, request_id: requestId, endpoint: ctx.path, data };
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
