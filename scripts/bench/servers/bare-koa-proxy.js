// Baseline: the simplest proxy a user could write instead of tkgate: bare Koa reading the JSON body and
// POSTing it to the upstream through an undici Pool, answering the upstream's bytes; no auth at all.
import Koa from 'koa';
import { Pool } from 'undici';

const upstream = new Pool(`http://127.0.0.1:${process.env.UPSTREAM_PORT}`, { connections: 64 });
const app = new Koa();
app.use(async (ctx) => {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const answer = await upstream.request({ path: '/json', method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
  ctx.status = answer.statusCode;
  ctx.type = 'application/json';
  ctx.body = Buffer.from(await answer.body.arrayBuffer());
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
