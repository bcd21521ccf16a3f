import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { call, loginToken, toolkitClient } from '../support/http.js';
import { rawRequest } from '../support/raw-http.js';
import { eventually, scrape, valueOf } from '../support/ops.js';
import { gatewayDefaults, writeConfig } from '../support/gateway-process.js';
import { tempDir, tkgateBin } from '../support/paths.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';

const ACCESS_FIELDS = ['time', 'level', 'msg', 'method', 'path', 'route', 'status', 'duration_ms', 'bytes', 'request_id', 'trace_id', 'client'];

for (const dialect of dialects) {
  describe(`metrics and the access log (${dialect.name})`, () => {
    const dir = toolkitDir({ 'shop.yaml': { name: 'shop', type: 'app', endpoints: [echoEndpoint()] } });
    const s = withGateway(
      dialect,
      [{ username: 'mia' }, { username: 'rita' }],
      {
        toolkits: { dir, watch: false },
        plugins: pluginsWithTestFunctions,
        auth: { login_max_failures: 1 },
      },
      { process: true }, // signals and stdout
    );
    const requestLines = () => s.gateway.logs.filter((line) => line.msg === 'request');

    it('counts known traffic by route template, status and login result', async () => {
      const token = await s.login('mia');
      await s.login('mia');
      expect((await s.auth.login('rita', 'wrong')).status).to.equal(401);
      expect((await s.auth.login('rita', 'wrong')).status).to.equal(429);
      for (let i = 0; i < 3; i++) expect((await s.auth.status(token)).status).to.equal(200);
      const shop = toolkitClient(s.gateway.base, token);
      expect((await shop.get('shop', 'echo', { q: 'x' })).status).to.equal(200);
      expect((await shop.get('shop', 'echo', {}, { token: undefined, headers: { authorization: 'Bearer nope' } })).status).to.equal(401);
      expect((await call('GET', `${s.gateway.base}/no/such/thing`)).status).to.equal(404);

      const { contentType, samples } = await eventually('the last request counted', async () => {
        const scraped = await scrape(s.gateway);
        return valueOf(scraped.samples, 'tkgate_requests_total', { route: 'other', status: '404' }) === 1 ? scraped : undefined;
      });
      expect(contentType).to.match(/^text\/plain; version=0\.0\.4/);
      const requests = (route: string, status: string) => valueOf(samples, 'tkgate_requests_total', { route, status });
      expect(requests('auth/login', '200')).to.equal(2);
      expect(requests('auth/login', '401')).to.equal(1);
      expect(requests('auth/login', '429')).to.equal(1);
      expect(requests('auth/status', '200')).to.equal(3);
      expect(requests('tk/app/shop/echo', '200')).to.equal(1);
      expect(requests('tk/app/shop/echo', '401')).to.equal(1);
      expect(valueOf(samples, 'tkgate_request_duration_seconds_count', { route: 'auth/status' })).to.equal(3);
      expect(valueOf(samples, 'tkgate_request_duration_seconds_bucket', { route: 'auth/status', le: '+Inf' })).to.equal(3);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'success' })).to.equal(2);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'invalid' })).to.equal(1);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'rate_limited' })).to.equal(1);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'busy' })).to.equal(0);
      expect(valueOf(samples, 'tkgate_sessions')).to.equal(2);
      expect(valueOf(samples, 'tkgate_upstream_duration_seconds_count', { toolkit: 'shop', endpoint: 'echo' })).to.equal(1);
      expect(samples.some((sample) => sample.name === 'tkgate_exec_running')).to.equal(true);
      expect(valueOf(samples, 'tkgate_exec_running')).to.equal(0);
      for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
        expect(
          samples.some((sample) => sample.name === name),
          name,
        ).to.equal(true);
      }
    });

    it('writes one access line per request with exactly the fields of docs/operating.md, never a token, body or query string', async () => {
      const token = await s.login('mia');
      const before = requestLines().length;
      const secretQuery = 'q=query-secret-value&token=' + token;
      const reply = await call('POST', `${s.gateway.base}/tk/app/shop/echo?${secretQuery}`, { token, body: { note: 'body-secret-value' } });
      expect(reply.status).to.equal(200);
      const line = await eventually('the access line', () =>
        requestLines()
          .slice(before)
          .find((entry) => entry.request_id === reply.body.request_id),
      );
      expect(Object.keys(line).sort()).to.deep.equal([...ACCESS_FIELDS, 'user_id'].sort());
      expect(line).to.deep.include({
        level: 'info',
        msg: 'request',
        method: 'POST',
        path: '/api/tk/app/shop/echo',
        route: 'tk/app/shop/echo',
        status: 200,
        client: '127.0.0.1',
        user_id: s.ids.mia,
      });
      expect(line.bytes).to.equal(Number(reply.headers.get('content-length')));
      expect(line.duration_ms).to.be.a('number').and.at.least(0);

      const anonymous = await call('GET', `${s.gateway.base}/auth/status?${secretQuery}`);
      const refused = await eventually('the 401 line', () => requestLines().find((entry) => entry.request_id === anonymous.body.request_id));
      expect(Object.keys(refused).sort()).to.deep.equal([...ACCESS_FIELDS].sort());
      expect(refused).to.deep.include({ path: '/api/auth/status', route: 'auth/status', status: 401 });

      const output = s.gateway.output();
      for (const secret of [token, 'query-secret-value', 'body-secret-value', passwordOf('mia')]) expect(output).not.to.include(secret);
    });

    it('writes a path that needs escaping as valid JSON, in the envelope and in the access line', async () => {
      // The access line quotes plain ASCII as it is and escapes the rest (json-string.ts).
      const token = await s.login('mia');
      // Node's parser takes `"` and `\` in a path as they are (and refuses bytes past ASCII).
      const path = '/api/tk/app/shop/"quoted"\\back';
      const reply = await rawRequest(s.gateway.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
      expect(reply.status).to.equal(404);
      const body = JSON.parse(reply.body);
      expect(body).to.deep.include({ success: false, endpoint: path });
      const line = await eventually('the access line', () => requestLines().find((entry) => entry.request_id === body.request_id));
      expect(line).to.deep.include({ path, status: 404, method: 'GET' });
    });

    it('writes each line with its own method and path when calls of one route alternate them', async () => {
      // A route's method, path and route text are kept while they repeat (ops/request-log.ts, requestHead).
      const token = await s.login('mia');
      const calls = [
        ['GET', '/tk/app/shop/echo'],
        ['POST', '/tk/app/shop/echo'],
        ['GET', '/tk/app/shop/echo'],
        ['GET', '/no/such/a'],
        ['GET', '/no/such/b'],
        ['DELETE', '/no/such/b'],
        ['GET', '/no/such/a'],
      ] as const;
      for (const [method, path] of calls) {
        const reply = await call(method, `${s.gateway.base}${path}`, { token, ...(method === 'POST' ? { body: {} } : {}) });
        const line = await eventually(`the line of ${method} ${path}`, () => requestLines().find((entry) => entry.request_id === reply.body.request_id));
        expect(line).to.deep.include({ method, path: `/api${path}`, route: path.startsWith('/tk/') ? 'tk/app/shop/echo' : 'other', status: reply.status });
      }
    });

    it('keeps route labels to templates: 1,000 distinct URLs add at most the label "other"', async () => {
      const token = await s.login('mia');
      const routesBefore = new Set((await scrape(s.gateway)).samples.filter((x) => x.name === 'tkgate_requests_total').map((x) => x.labels.route));
      const urls = Array.from({ length: 1000 }, (_, i) => {
        const variants = [
          `${s.gateway.base}/tk/app/shop/echo?n=${i}`,
          `${s.gateway.base}/tk/app/shop/nope-${i}`,
          `${s.gateway.base}/tk/app/ghost-${i}/echo`,
          `${s.gateway.base}/random/${i}?token=t${i}`,
          `http://127.0.0.1:${s.gateway.port}/x${i}`,
        ];
        return variants[i % variants.length]!;
      });
      for (let i = 0; i < urls.length; i += 50) await Promise.all(urls.slice(i, i + 50).map((url) => call('GET', url, { token })));
      const samples = (await scrape(s.gateway)).samples;
      const routes = new Set(samples.filter((x) => x.name === 'tkgate_requests_total').map((x) => x.labels.route));
      expect([...routes].filter((route) => !routesBefore.has(route))).to.deep.equal([]);
      expect([...routes].sort()).to.deep.equal(['auth/login', 'auth/status', 'other', 'tk/app/shop/echo']);
      const durationSeries = samples.filter((x) => x.name === 'tkgate_request_duration_seconds_count');
      expect(durationSeries.length).to.equal(4);
      expect(valueOf(samples, 'tkgate_requests_total', { route: 'tk/app/shop/echo', status: '200' })).to.be.at.least(200);
    });

    it('rescans the toolkit files on SIGHUP (applied, then refused) and survives SIGHUP and SIGUSR2', async () => {
      const token = await s.login('mia');
      const rescans = () => s.gateway.logs.filter((line) => line.msg === 'toolkits rescanned');
      writeToolkit(dir, 'more.yaml', { name: 'more', type: 'app', endpoints: [echoEndpoint()] });
      s.gateway.child.kill('SIGHUP');
      await eventually('the first rescan', () => rescans().length === 1 || undefined);
      expect(rescans()[0]).to.deep.include({ reason: 'SIGHUP', toolkits: ['more', 'shop'], problems: 0 });
      expect((await toolkitClient(s.gateway.base, token).get('more', 'echo')).status).to.equal(200);

      writeToolkit(dir, 'broken.yaml', 'name: [not a name');
      s.gateway.child.kill('SIGHUP');
      await eventually('the second rescan', () => rescans().length === 2 || undefined);
      expect(rescans()[1]).to.deep.include({ problems: 1 });
      rmSync(path.join(dir, 'broken.yaml'));

      s.gateway.child.kill('SIGUSR2');
      await eventually('SIGUSR2 logged', () => s.gateway.logs.find((line) => line.msg === 'signal ignored' && line.signal === 'SIGUSR2'));
      expect(s.gateway.child.exitCode).to.equal(null);
      expect(s.gateway.child.signalCode).to.equal(null);
      const samples = (await scrape(s.gateway)).samples;
      expect(valueOf(samples, 'tkgate_toolkit_reloads_total', { result: 'applied' })).to.equal(1);
      expect(valueOf(samples, 'tkgate_toolkit_reloads_total', { result: 'refused' })).to.equal(1);
      expect((await call('GET', `http://127.0.0.1:${s.gateway.port}/healthz`)).status).to.equal(200);
    });
  });
}

describe('log.access false', () => {
  const [sqlite] = dialects;
  const s = withGateway(sqlite!, [], { log: { access: false } });

  it('writes no access lines', async () => {
    await call('GET', `http://127.0.0.1:${s.gateway.port}/healthz`);
    await s.auth.status();
    await eventually(
      'the metrics count both',
      async () => valueOf((await scrape(s.gateway)).samples, 'tkgate_requests_total', { route: 'auth/status', status: '401' }) === 1 || undefined,
    );
    expect(s.gateway.logs.filter((line) => line.msg === 'request')).to.deep.equal([]);
  });
});

// stdout a regular file (`tkgate start >> gateway.log`): log.ts writes a turn's lines with writeSync, not process.stdout.
describe('the log written to a file', function () {
  this.timeout(60_000);
  const [sqlite] = dialects;
  const s = withDatabase(sqlite!, [{ username: 'mia' }]);

  it('holds every line whole, the access lines of a burst of calls and the lines written at SIGTERM', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'gateway.log');
    const out = openSync(file, 'a');
    const config = writeConfig({ ...gatewayDefaults(), db: s.bed.dbConfig }, dir);
    const child = spawn(process.execPath, [tkgateBin, 'start', '--config', config], { cwd: dir, stdio: ['ignore', out, 'pipe'] });
    closeSync(out);
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    try {
      const lines = () =>
        readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      const listening = await eventually('the listening line', () => lines().find((line) => line.msg === 'listening'));
      const base = String(listening.url);
      const token = await loginToken(base, 'mia', passwordOf('mia'));
      const answers = await Promise.all(Array.from({ length: 40 }, () => call('GET', `${base}/auth/status`, { token })));
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      const ids = answers.map((answer) => answer.body.request_id as string);
      await eventually('the 40 access lines', () => ids.every((id) => lines().some((line) => line.msg === 'request' && line.request_id === id)) || undefined);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).to.equal(0);
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith('\n')).to.equal(true);
    const all = text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(all.filter((line) => line.msg === 'request' && line.route === 'auth/status')).to.have.length(40);
    expect(all.at(-1)!.msg).to.equal('stopped');
  });
});
