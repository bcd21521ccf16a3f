import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { runCli } from '../support/cli.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { call, type Reply } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

/** CORS over plain HTTP, header by header (the browser test shows a real browser agrees). */
const LISTED = 'http://tools.example.test:8443';
const UNLISTED = 'http://evil.example.test';

const upstream: Upstream = await startUpstream(4096);
after(() => upstream.close());

const desk = {
  name: 'desk',
  type: 'app',
  endpoints: [
    echoEndpoint({ client_filter: { field_rules: { n: { type: 'integer' } } } }),
    { path: 'file', method: 'GET', type: 'http', upstream: { url: `${upstream.url}/file`, passthrough: true } },
  ],
};

const preflight = (url: string, origin: string) =>
  call('OPTIONS', url, { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });

const corsHeaders = (reply: Reply) => [...reply.headers.keys()].filter((name) => name.startsWith('access-control-'));

function expectActualAnswer(reply: Reply, allowOrigin: string, what: string): void {
  expect(reply.headers.get('access-control-allow-origin'), what).to.equal(allowOrigin);
  expect(reply.headers.get('access-control-expose-headers'), what).to.match(/(^|, )X-Request-Id(,|$)/);
  expect(reply.headers.get('access-control-allow-credentials'), what).to.equal(null);
}

for (const dialect of dialects) {
  describe(`CORS (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'cora' }],
      { server: { port: 0, cors: { origins: [LISTED, 'http://other.example.test'] } } },
      { toolkitsDir: toolkitDir({ 'desk.yaml': desk }) },
    );
    const root = () => new URL(s.gateway.base).origin;

    it("answers a listed origin's preflight with 204 before authentication, on every route", async () => {
      const urls = ['/tk/app/desk/echo', '/tk/app/nothing/here', '/auth/login', '/auth/logout', '/auth/api-keys/0123', '/openapi.json', '/no/such/route'].map(
        (path) => s.gateway.base + path,
      );
      for (const url of [...urls, `${root()}/healthz`]) {
        const reply = await preflight(url, LISTED);
        expect(reply.status, url).to.equal(204);
        expect(reply.headers.get('access-control-allow-origin'), url).to.equal(LISTED);
        expect(reply.headers.get('access-control-allow-methods')!.split(', '), url).to.include.members(['GET', 'POST', 'DELETE']);
        expect(reply.headers.get('access-control-allow-headers')!.split(', '), url).to.include.members(['authorization', 'content-type']);
        expect(Number(reply.headers.get('access-control-max-age')), url).to.be.greaterThan(0);
        expect(reply.headers.get('access-control-allow-credentials'), url).to.equal(null);
        expect(reply.headers.get('vary'), url).to.match(/origin/i);
      }
    });

    it('puts Allow-Origin and Expose-Headers on every answer to a listed origin: success, errors, passthrough', async () => {
      const headers = { origin: LISTED };
      const login = await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'cora', password: 'wrong' }, headers });
      expect(login.status).to.equal(401);
      expectActualAnswer(login, LISTED, 'failed login');
      const token = await s.login('cora');
      const answers: Array<[string, Promise<Reply>, number]> = [
        ['echo', call('GET', `${s.gateway.base}/tk/app/desk/echo?n=3`, { token, headers }), 200],
        ['no token', call('GET', `${s.gateway.base}/tk/app/desk/echo`, { headers }), 401],
        ['invalid payload', call('GET', `${s.gateway.base}/tk/app/desk/echo?n=x`, { token, headers }), 400],
        ['unknown toolkit', call('GET', `${s.gateway.base}/tk/app/nothing/here`, { token, headers }), 404],
        ['unknown route', call('GET', `${s.gateway.base}/no/such/route`, { headers }), 404],
        ['wrong method', call('GET', `${s.gateway.base}/auth/login`, { headers }), 405],
        ['passthrough download', call('GET', `${s.gateway.base}/tk/app/desk/file`, { token, headers }), 200],
        ['status', call('GET', `${s.gateway.base}/auth/status`, { token, headers }), 200],
      ];
      for (const [what, pending, status] of answers) {
        const reply = await pending;
        expect(reply.status, what).to.equal(status);
        expectActualAnswer(reply, LISTED, what);
      }
    });

    it('gives an unlisted origin no CORS header at all; its preflight is not answered', async () => {
      for (const origin of [UNLISTED, 'null', LISTED.toUpperCase(), `${LISTED}/`]) {
        const pre = await preflight(`${s.gateway.base}/tk/app/desk/echo`, origin);
        expect(pre.status, origin).to.equal(401);
        expect(corsHeaders(pre), origin).to.deep.equal([]);
        const login = await preflight(`${s.gateway.base}/auth/login`, origin);
        expect(login.status, origin).to.equal(405);
        expect(corsHeaders(login), origin).to.deep.equal([]);
        const actual = await call('GET', `${s.gateway.base}/auth/status`, { token: await s.login('cora'), headers: { origin } });
        expect(actual.status, origin).to.equal(200);
        expect(corsHeaders(actual), origin).to.deep.equal([]);
      }
    });

    it("answers the OIDC exchange, and only it, with credentials for an allowed origin (its login_code is bound to the browser's cookie)", async () => {
      const exchange = `${s.gateway.base}/auth/oidc/exchange`;
      const pre = await preflight(exchange, LISTED);
      expect(pre.status).to.equal(204);
      expect(pre.headers.get('access-control-allow-origin')).to.equal(LISTED);
      expect(pre.headers.get('access-control-allow-credentials')).to.equal('true');
      const actual = await call('POST', exchange, { headers: { origin: LISTED }, body: { login_code: 'x'.repeat(43) } });
      expect(actual.status).to.equal(400);
      expect(actual.headers.get('access-control-allow-origin')).to.equal(LISTED);
      expect(actual.headers.get('access-control-allow-credentials')).to.equal('true');
      expect(corsHeaders(await call('POST', exchange, { headers: { origin: UNLISTED }, body: {} }))).to.deep.equal([]);
      expect((await preflight(`${s.gateway.base}/auth/login`, LISTED)).headers.get('access-control-allow-credentials')).to.equal(null);
    });

    it('answers "*" with a literal * and never with credentials; sends nothing when no origin is configured', async () => {
      const any = await startGateway({ config: { db: s.bed.dbConfig, server: { port: 0, cors: { origins: ['*'] } } } });
      const none = await startGateway({ config: { db: s.bed.dbConfig } });
      try {
        const pre = await preflight(`${any.base}/auth/login`, UNLISTED);
        expect(pre.status).to.equal(204);
        expect(pre.headers.get('access-control-allow-origin')).to.equal('*');
        expect(pre.headers.get('access-control-allow-credentials')).to.equal(null);
        expectActualAnswer(await call('GET', `${any.base}/auth/status`, { headers: { origin: 'http://anyone.example.test' } }), '*', 'wildcard 401');
        // The exchange carries the browser's cookie: the origin by name (a credentialed answer may not say *).
        const exchange = await preflight(`${any.base}/auth/oidc/exchange`, UNLISTED);
        expect(exchange.headers.get('access-control-allow-origin')).to.equal(UNLISTED);
        expect(exchange.headers.get('access-control-allow-credentials')).to.equal('true');
        expect(exchange.headers.get('vary')).to.match(/origin/i);

        const old = await preflight(`${none.base}/auth/login`, LISTED);
        expect(old.status).to.equal(405);
        expect(corsHeaders(old)).to.deep.equal([]);
        expect(corsHeaders(await call('GET', `${none.base}/auth/status`, { headers: { origin: LISTED } }))).to.deep.equal([]);
      } finally {
        await Promise.all([any.stop(), none.stop()]);
      }
    });
  });
}

describe('server.cors.origins validation', () => {
  for (const [origins, reason] of [
    [['http://tools.example.test/'], /not an origin/],
    [['*', 'http://a.example.test'], /"\*" must be the only entry/],
  ] as const) {
    it(`refuses ${JSON.stringify(origins)} in one line naming the key`, async () => {
      const result = await runCli(['config', 'check', '--config', writeConfig({ server: { cors: { origins } } })]);
      expect(result.code).to.not.equal(0);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.include('server.cors.origins').and.match(reason);
    });
  }
});
