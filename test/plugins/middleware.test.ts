import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const middlewarePlugin = path.join(fixtures, 'middleware-plugin.js');
const latePlugin = path.join(fixtures, 'late-middleware-plugin.js');
const misbehavingPlugin = path.join(fixtures, 'misbehaving-middleware-plugin.js');

/** What koa-helmet sets on every answer with its defaults. */
const HELMET_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'SAMEORIGIN',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
};

const order = (headers: Headers) => (headers.get('x-order') ?? '').split(', ');

for (const dialect of dialects) {
  describe(`plugin middleware at named points, through the real binary (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'ann', power: 10 }],
      { plugins: [...pluginsWithTestFunctions, middlewarePlugin, latePlugin] },
      { toolkitsDir: toolkitDir({ 'notes.yaml': { name: 'notes', type: 'app', endpoints: [echoEndpoint()] } }) },
    );

    it('runs an unmodified npm middleware (koa-helmet) on auth, toolkit, health and unknown routes alike', async () => {
      const token = await s.login('ann');
      const base = s.gateway.base;
      const answers = [
        await s.auth.status(token),
        await s.auth.login('ann', 'wrong password'),
        await call('GET', `${base}/tk/app/notes/echo`, { token }),
        await call('GET', `${base}/tk/app/notes/nothing`, { token }),
        await call('GET', `${base.replace(/\/api$/, '')}/healthz`),
        await call('GET', `${base}/no/such/route`),
      ];
      expect(answers.map((answer) => answer.status)).to.deep.equal([200, 401, 200, 404, 200, 404]);
      for (const answer of answers) {
        for (const [name, value] of Object.entries(HELMET_HEADERS)) expect(answer.headers.get(name), name).to.equal(value);
        // The gateway's own headers are still there, beside helmet's.
        expect(answer.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
      }
    });

    it('runs middleware in point order on a toolkit request, plugins in configuration order, each plugin in call order', async () => {
      const token = await s.login('ann');
      const answer = await call('POST', `${s.gateway.base}/tk/app/notes/echo`, { token, body: { a: 1 } });
      expect(answer.status).to.equal(200);
      expect(order(answer.headers)).to.deep.equal([
        'request',
        'request-second',
        'late-plugin',
        'before:authenticate',
        'after:authenticate',
        'after:route',
        'after:payload-filter',
        'before:execute',
      ]);
    });

    it('stops at the step that refuses: a 401 has run only the points before authentication', async () => {
      const answer = await call('GET', `${s.gateway.base}/tk/app/notes/echo`);
      expect(answer.status).to.equal(401);
      expect(answer.body.error.code).to.equal('unauthorized');
      expect(order(answer.headers)).to.deep.equal(['request', 'request-second', 'late-plugin', 'before:authenticate']);
    });

    it('runs only the request point on an auth route', async () => {
      const token = await s.login('ann');
      const answer = await s.auth.status(token);
      expect(order(answer.headers)).to.deep.equal(['request', 'request-second', 'late-plugin']);
    });
  });
}

for (const dialect of dialects.slice(0, 1)) {
  describe(`plugin middleware that misbehaves is answered in the envelope (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'ann', power: 10 }],
      { plugins: [...pluginsWithTestFunctions, misbehavingPlugin] },
      {
        toolkitsDir: toolkitDir({
          'notes.yaml': {
            name: 'notes',
            type: 'app',
            endpoints: [echoEndpoint(), { path: 'slow', method: 'POST', type: 'internal', handler: 'sleep', audit: true }],
          },
        }),
      },
    );
    const misbehave = (how: string, token?: string) =>
      call('POST', `${s.gateway.base}/tk/app/notes/slow`, { token, body: { n: 1 }, headers: { 'x-misbehave': how } });
    const errorLines = (msg: string) => s.gateway.logs.filter((line) => line.msg === msg && line.level === 'error');

    const thrown: Array<[number, string]> = [
      [400, 'bad_request'],
      [401, 'unauthorized'],
      [403, 'forbidden'],
      [413, 'payload_too_large'],
      [415, 'unsupported_media_type'],
      [429, 'rate_limited'],
      [418, 'client_error'],
    ];
    for (const [status, code] of thrown) {
      it(`ctx.throw(${status}) is ${status} ${code} in the envelope, with the middleware's message and headers`, async () => {
        const answer = await misbehave(`throw-${status}`);
        expect(answer.status).to.equal(status);
        expect(answer.body).to.deep.include({ success: false });
        expect(answer.body.error).to.deep.equal({ code, message: `refused by the test middleware (${status})` });
        expect(answer.headers.get('retry-after')).to.equal('7');
      });
    }

    it("a middleware that does not await next() gets the endpoint's real answer (and audit), and an error line naming the plugin", async () => {
      const token = await s.login('ann');
      const answer = await misbehave('no-await', token);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body.data).to.deep.include({ slept: true });
      const [line] = errorLines('plugin middleware returned before the request was answered (it does not await next())');
      expect(line).to.include({ plugin: 'tkgate-test-misbehaving-middleware', point: 'before:execute' });
      const [event] = await s.bed.db('audit_events').where({ endpoint: 'slow' }).orderBy('id', 'desc').limit(1);
      expect(event).to.include({ status: 200, code: 'ok' });
    });

    it('a body stream that fails before its first byte is 500 internal_error in the envelope, and an error line naming the plugin', async () => {
      const token = await s.login('ann');
      const answer = await call('GET', `${s.gateway.base}/tk/app/notes/echo`, { token, headers: { 'x-misbehave': 'failing-stream' } });
      expect(answer.status).to.equal(500);
      expect(answer.body.error.code).to.equal('internal_error');
      expect(JSON.stringify(answer.body)).not.to.include('secret');
      const [line] = errorLines('plugin middleware body stream failed');
      expect(line).to.include({ plugin: 'tkgate-test-misbehaving-middleware', point: 'request' });
    });
  });
}

describe('plugin middleware: a point that does not exist', () => {
  it('refuses the boot in one line naming the point and the points there are', async () => {
    const plugin = path.join(tempDir(), 'bad-point.mjs');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      plugin,
      "export default { name: 'bad-point', apiVersion: '^1.3', register(api) { api.useMiddleware('after:everything', (ctx, next) => next()); } };",
    );
    const config = writeConfig({ db: { client: 'sqlite', filename: path.join(tempDir(), 'db.sqlite') }, plugins: ['@tkgate/plugin-internal', plugin] });
    const result = await runCli(['config', 'check', '--config', config]);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr).to.match(/no middleware point "after:everything" \(points: request, before:authenticate, after:authenticate/);
  });
});
