import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { rawRequest } from '../support/raw-http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

const corsOrigins = ['http://app.example.test'];
const toolkits = toolkitDir({ 'shop.yaml': { name: 'shop', type: 'app', endpoints: [echoEndpoint()] } });

/** The access line of a request. */
const accessLine = (gateway: GatewayProcess, requestId: string) =>
  eventually(`the access line of ${requestId}`, () => gateway.logs.find((l) => l.msg === 'request' && l.request_id === requestId));

for (const dialect of dialects) {
  describe(`one request path: every route through Koa's stack (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'bob', power: 5 }], { server: { port: 0, cors: { origins: corsOrigins } } }, { toolkitsDir: toolkits });

    it('answers a URL with a #fragment like the URL without it, on auth and toolkit routes alike', async () => {
      const token = await s.login('bob');
      const port = Number(new URL(s.gateway.base).port);
      for (const path of ['/api/auth/status', '/api/tk/app/shop/echo']) {
        const raw = `GET ${path}#part HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`;
        const reply = await rawRequest(port, raw);
        expect(reply.status, `${path}#part`).to.equal(200);
        expect(JSON.parse(reply.body)).to.include({ success: true, endpoint: path });
      }
    });

    it('gives every kind of answer the same request id, envelope, CORS headers and access line', async () => {
      const token = await s.login('bob');
      const base = s.gateway.base;
      const origin = { origin: corsOrigins[0]! };
      const cases: Array<[string, string, string | undefined, number, string]> = [
        ['GET', `${base}/auth/status`, token, 200, 'auth/status'],
        ['GET', `${base}/auth/status`, undefined, 401, 'auth/status'],
        ['PUT', `${base}/auth/status`, token, 405, 'auth/status'],
        ['GET', `${base}/tk/app/shop/echo`, token, 200, 'tk/app/shop/echo'],
        ['GET', `${base}/tk/app/shop/echo`, undefined, 401, 'tk/app/shop/echo'],
        ['GET', `${base}/tk/app/shop/nothing`, token, 404, 'other'],
        ['GET', `${base}/no/such/route`, token, 404, 'other'],
      ];
      for (const [method, url, withToken, status, route] of cases) {
        const reply = await call(method, url, { token: withToken, headers: origin });
        const what = `${method} ${url} ${withToken ? 'with' : 'without'} a token`;
        expect(reply.status, what).to.equal(status);
        const requestId = reply.headers.get('x-request-id')!;
        expect(requestId, what).to.match(/^[0-9a-f-]{36}$/);
        expect(reply.body, what).to.include({ success: status === 200, request_id: requestId, endpoint: new URL(url).pathname });
        expect(reply.headers.get('access-control-allow-origin'), what).to.equal(corsOrigins[0]);
        expect(reply.headers.get('access-control-expose-headers'), what).to.equal(
          'X-Request-Id, Retry-After, Content-Disposition, RateLimit-Policy, RateLimit',
        );
        expect(reply.headers.get('vary'), what).to.equal('Origin');
        expect(await accessLine(s.gateway, requestId), what).to.include({ method, path: new URL(url).pathname, route, status });
      }
    });

    it('keeps the envelope for a path under tk/ that names no toolkit address', async () => {
      const token = await s.login('bob');
      for (const path of ['/tk/', '/tk/app', '/tk/app/', '/tkx/app/shop/echo']) {
        const reply = await call('GET', `${s.gateway.base}${path}`, { token });
        expect(reply.status, path).to.equal(404);
        expect(reply.body.error.code, path).to.equal('not_found');
      }
    });

    it('answers HEAD, a query string and a trailing slash on a fixed route like GET', async () => {
      const token = await s.login('bob');
      const head = await call('HEAD', `${s.gateway.base}/auth/status`, { token });
      expect(head.status).to.equal(200);
      expect(head.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      for (const path of ['/auth/status?verbose=1', '/auth/status/']) {
        const reply = await call('GET', `${s.gateway.base}${path}`, { token });
        expect(reply.status, path).to.equal(200);
        expect(reply.body.data.user.username, path).to.equal('bob');
      }
    });

    describe('a session ended through another gateway', () => {
      let other: GatewayProcess;
      before(async () => {
        other = await startGateway({ config: { db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: false }, plugins: pluginsWithTestFunctions } });
      });
      after(() => other?.stop());

      it('is refused at once (SQLite), within sessions.cache_ttl (MySQL)', async () => {
        const token = await s.login('bob');
        expect((await s.auth.status(token)).status).to.equal(200);
        expect((await call('POST', `${other.base}/auth/logout`, { token })).status).to.equal(200);
        const deadline = Date.now() + (dialect.name === 'sqlite' ? 0 : 15_000);
        let status = (await s.auth.status(token)).status;
        while (status !== 401 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          status = (await s.auth.status(token)).status;
        }
        expect(status).to.equal(401);
      });
    });
  });
}
