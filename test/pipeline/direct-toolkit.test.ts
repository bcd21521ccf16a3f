import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, type CallOptions } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { startUpstream, type Upstream } from '../support/upstream.js';

const upstream: Upstream = await startUpstream();
after(() => upstream.close());

const http = (path: string, url: string, extra: Record<string, unknown> = {}) => ({
  path,
  method: ['GET', 'POST'],
  type: 'http',
  upstream: { url, timeout: '2s', ...extra },
});
const toolkits = toolkitDir({
  'shop.yaml': {
    name: 'shop',
    type: 'app',
    endpoints: [
      echoEndpoint({ client_filter: { allowed_content_types: ['application/json'], field_rules: { q: { type: 'string', max_length: 5 } } } }),
      { path: 'only-get', method: ['GET'], type: 'internal', handler: 'echo' },
      http('json', `${upstream.url}/json`),
      http('file', `${upstream.url}/file`, { passthrough: true }),
      http('gone', `${upstream.url}/status/500`),
    ],
  },
});

/** Everything about an answer but what differs per request: the date, and the request id wherever it shows. */
async function answerOf(gateway: GatewayProcess, method: string, path: string, options: CallOptions) {
  const response = await fetch(`${gateway.base}${path}`, {
    method,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers },
    body: options.rawBody,
  });
  const requestId = response.headers.get('x-request-id')!;
  expect(requestId, `${method} ${path}`).to.match(/^[0-9a-f-]{36}$/);
  const headers = Object.fromEntries([...response.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id'));
  const body = (await response.text()).replaceAll(requestId, '(id)');
  return { answer: { status: response.status, headers, body }, requestId };
}

/** The access line of a request, without what differs per request. */
const accessLine = (gateway: GatewayProcess, requestId: string) =>
  eventually(`the access line of ${requestId}`, () => {
    const line = gateway.logs.find((l) => l.msg === 'request' && l.request_id === requestId);
    if (!line) return undefined;
    const { time: _time, duration_ms: _duration, request_id: _id, ...rest } = line;
    return rest;
  });

for (const dialect of dialects) {
  describe(`toolkit requests answered outside Koa's stack (${dialect.name})`, () => {
    // This gateway answers toolkit requests directly (pipeline/direct-toolkit.ts); `throughKoa` through Koa's stack.
    const s = withGateway(dialect, [{ username: 'bob', power: 5 }], {}, { toolkitsDir: toolkits });
    let throughKoa: GatewayProcess;
    before(async () => {
      throughKoa = await startGateway({
        config: { db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: false }, plugins: pluginsWithTestFunctions },
        env: { TKGATE_DIRECT_ANSWERS: 'off' },
      });
    });
    after(() => throughKoa?.stop());

    it('give the same status, headers, body and access line as through Koa, for answers and refusals alike', async () => {
      const token = await s.login('bob');
      const json = { 'content-type': 'application/json' };
      const requests: Array<[string, string, CallOptions]> = [
        ['GET', '/tk/app/shop/echo?q=disk', { token }],
        ['POST', '/tk/app/shop/echo', { token, headers: json, rawBody: '{"q":"disk"}' }],
        ['POST', '/tk/app/shop/echo', { token, headers: json, rawBody: '{"q":"too long"}' }], // 400 invalid_payload
        ['POST', '/tk/app/shop/echo', { token, headers: json, rawBody: '{"q":' }], // 400, syntax
        ['POST', '/tk/app/shop/echo', { token, headers: { 'content-type': 'text/plain' }, rawBody: 'q' }], // 400, content type
        ['HEAD', '/tk/app/shop/only-get', { token }],
        ['POST', '/tk/app/shop/only-get', { token }], // 405 with Allow
        ['GET', '/tk/app/shop/nothing-here', { token }], // 404 endpoint_not_found
        ['GET', '/tk/app/no-such-toolkit/echo', { token }], // 404 toolkit_not_found
        ['GET', '/tk/app/shop/echo', {}], // 401
        ['POST', '/tk/app/shop/json', { token, headers: json, rawBody: '{}' }],
        ['GET', '/tk/app/shop/file', { token }], // passthrough
        ['POST', '/tk/app/shop/gone', { token }], // 502 upstream_error
      ];
      for (const [method, path, options] of requests) {
        const direct = await answerOf(s.gateway, method, path, options);
        const viaKoa = await answerOf(throughKoa, method, path, options);
        expect(direct.answer, `${method} ${path}`).to.deep.equal(viaKoa.answer);
        expect(await accessLine(s.gateway, direct.requestId), `${method} ${path}`).to.deep.equal(await accessLine(throughKoa, viaKoa.requestId));
      }
    });

    it('leave to Koa what is no toolkit address, and keep the envelope for a path under tk/ that names nothing', async () => {
      const token = await s.login('bob');
      for (const path of ['/tk/', '/tk/app', '/tk/app/', '/tkx/app/shop/echo']) {
        const reply = await call('GET', `${s.gateway.base}${path}`, { token });
        expect(reply.status, path).to.equal(404);
        expect(reply.body.error.code, path).to.equal('not_found');
      }
    });
  });
}
