import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import Koa from 'koa';
import { coreModule } from '../../support/core-module.js';

const { GatewayKoa } = await coreModule<typeof import('../../../packages/core/dist/http/gateway-koa.js')>('http/gateway-koa.js');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to an app on a loopback port: what came back, the Date header aside. */
async function answerOf(app: Koa, method = 'GET'): Promise<Answer> {
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<Answer>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path: '/' }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const { date: _date, ...headers } = res.headers;
          resolve({ status: res.statusCode!, headers, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.on('error', reject);
      req.end();
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** Each kind of body Koa's respond knows, set by a middleware. */
const bodies: Array<[string, Koa.Middleware, string?]> = [
  ['a string', (ctx) => void (ctx.body = 'plain text')],
  ['a Buffer', (ctx) => void (ctx.body = Buffer.from('bytes'))],
  ['an object (JSON)', (ctx) => void (ctx.body = { a: [1, 'é'] })],
  ['a Node stream', (ctx) => void (ctx.body = Readable.from(['one ', 'two']))],
  ['a web ReadableStream', (ctx) => void (ctx.body = new Blob(['web stream']).stream())],
  ['a Blob', (ctx) => void (ctx.body = new Blob(['blob']))],
  ['a Response', (ctx) => void (ctx.body = new Response('fetch response'))],
  ['no body (the status message)', (ctx) => void (ctx.status = 418)],
  ['an explicit null body', (ctx) => void (ctx.body = null)],
  ['a 204 with a body set', (ctx) => void ((ctx.body = 'dropped'), (ctx.status = 204))],
  ['a 304', (ctx) => void (ctx.status = 304)],
  ['a JSON body to HEAD', (ctx) => void (ctx.body = { head: true }), 'HEAD'],
  ['no route (404)', () => undefined],
  [
    'ctx.respond = false',
    (ctx) => {
      ctx.respond = false;
      ctx.res.writeHead(202, { 'content-type': 'text/plain' }).end('by hand');
    },
  ],
  [
    'an error thrown',
    () => {
      throw Object.assign(new Error('teapot'), { status: 418, expose: true });
    },
  ],
];

describe('unit: GatewayKoa (http/gateway-koa.ts), Koa without its per-response on-finished watch', () => {
  for (const [name, middleware, method] of bodies) {
    it(`answers ${name} exactly as Koa does`, async () => {
      const koa = new Koa();
      koa.silent = true;
      koa.use(middleware);
      const gateway = new GatewayKoa();
      gateway.silent = true;
      gateway.use(middleware as never);
      expect(await answerOf(gateway, method)).to.deep.equal(await answerOf(koa, method));
    });
  }

  it('is what Koa calls for each request (a Koa release that stops calling handleRequest fails here)', async () => {
    let watched: unknown = 'not run';
    const gateway = new GatewayKoa();
    gateway.use((ctx) => {
      // Koa's own handleRequest has put on-finished's listener on the response before any middleware runs.
      watched = (ctx.res as { __onFinished?: unknown }).__onFinished;
      ctx.body = 'ok';
    });
    expect((await answerOf(gateway)).body).to.equal('ok');
    expect(watched).to.equal(undefined);
    const koa = new Koa();
    koa.use((ctx) => {
      watched = (ctx.res as { __onFinished?: unknown }).__onFinished;
      ctx.body = 'ok';
    });
    await answerOf(koa);
    expect(watched, "Koa's own handleRequest watches the response").to.be.a('function');
  });
});
