import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { call } from '../support/http.js';
import { downloadPeakGrowth } from '../support/process-memory.js';
import { rawRequest, startRawUpstream } from '../support/raw-http.js';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

/**
 * `upstream.forward: request`: an existing REST service behind the gateway with no adapter. A real REST upstream
 * on loopback records what it heard; its answers come back as they are.
 */
interface Heard {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  bytes: Buffer;
}

const BIG = 50 * 1024 * 1024;

async function startRestService() {
  const heard: Heard[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const seen = { method: req.method!, url: req.url!, headers: req.headers, body: bytes.toString('utf8'), bytes };
      heard.push(seen);
      const status = /\/status\/(\d+)/.exec(req.url!)?.[1];
      if (req.url!.startsWith('/svc/slow')) return; // never answers
      // Directory redirects, as servers make them: absolute with the upstream's origin, an absolute path, elsewhere.
      const origin = `http://${req.headers.host}`;
      const redirects: Record<string, string> = {
        '/svc/redirect-absolute': `${origin}/svc/reports/?page=2`,
        '/svc/redirect-path': '/svc/reports/',
        '/svc/redirect-outside': '/elsewhere/x',
        '/svc/redirect-away': 'https://example.com/x',
      };
      if (redirects[req.url!]) {
        res.writeHead(301, { location: redirects[req.url!] });
        return void res.end();
      }
      const big = /^\/svc\/big\/(\d+)$/.exec(req.url!);
      if (big) {
        const size = Number(big[1]);
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
        const chunk = Buffer.alloc(64 * 1024, 7);
        let sent = 0;
        const pump = () => {
          while (sent < size) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      res.writeHead(status ? Number(status) : 200, {
        'content-type': 'application/json',
        'set-cookie': ['a=1; Path=/', 'b=2; Path=/'],
        'x-upstream': 'yes',
        connection: 'keep-alive, x-hop',
        'x-hop': 'only for this connection',
      });
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify({ heard: { method: seen.method, url: seen.url, body: seen.body }, status: status ?? 'ok' }));
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    heard,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const rest = await startRestService();
const hostile = await startRawUpstream({
  '/both-lengths': 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  '/garbage': 'SPDY/9 whatever\r\n\r\n',
  // The head and 3 of the 100 bytes it announces, then the connection closes.
  '/cut': 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nabc',
});
after(async () => {
  await rest.close();
  hostile.close();
});

const forward = (path: string, url: string, extra: Record<string, unknown> = {}, method: string | string[] = METHODS) => ({
  path,
  method,
  type: 'http',
  upstream: { url, forward: 'request', ...extra },
});
const toolkit = {
  name: 'inventory',
  type: 'app',
  endpoints: [
    forward('api/*', `${rest.url}/svc`),
    forward('hosts/{host}', `${rest.url}/svc/hosts/{host}`, {}, ['GET', 'PUT']),
    {
      ...forward('filtered', `${rest.url}/svc/filtered`, {}, ['POST']),
      client_filter: { allowed_fields: ['name'], field_rules: { name: { type: 'string', max_length: 10 } } },
    },
    {
      ...forward('documents', `${rest.url}/svc/documents`, {}, ['POST', 'PUT']),
      client_filter: { allowed_content_types: ['text/plain', 'application/xml', 'application/octet-stream', 'application/json'] },
    },
    forward('slow', `${rest.url}/svc/slow`, { timeout: '1s' }, 'GET'),
    forward('malformed', `${hostile.url}/both-lengths`, {}, 'GET'),
    forward('garbage', `${hostile.url}/garbage`, {}, 'GET'),
    forward('nobody', 'http://127.0.0.1:1/nothing', {}, 'GET'),
    forward('cut', `${hostile.url}/cut`, {}, 'GET'),
    // One call at a time, none waiting: a call that has not let go of its place is a 503.
    { ...forward('single/*', `${rest.url}/svc`, {}, 'GET'), max_concurrency: 1, max_queue: 0 },
  ],
};

for (const dialect of dialects) {
  describe(`http endpoints: forward: request (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withGateway(dialect, [{ username: 'ops' }], {}, { toolkitsDir: toolkitDir({ 'inventory.yaml': toolkit }), process: true });
    let token: string;
    before(async () => {
      token = await s.login('ops');
    });
    const url = (path: string) => `${s.gateway.base}/tk/app/inventory/${path}`;
    const last = () => rest.heard.at(-1)!;

    it('forwards every method with its path rest, query byte for byte and body; the answer comes back as it is', async () => {
      for (const method of METHODS) {
        const body = ['POST', 'PUT', 'PATCH'].includes(method) ? JSON.stringify({ n: 1 }) : undefined;
        const response = await fetch(url(`api/items/42?b=2&a=%20x&a=1&flag`), {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body,
        });
        expect(response.status, method).to.equal(200);
        const text = await response.text();
        expect(last().method).to.equal(method);
        expect(last().url).to.equal('/svc/items/42?b=2&a=%20x&a=1&flag');
        expect(response.headers.get('x-upstream')).to.equal('yes');
        if (method === 'HEAD') expect(text).to.equal('');
        else expect(JSON.parse(text).heard).to.deep.equal({ method, url: '/svc/items/42?b=2&a=%20x&a=1&flag', body: body ?? '' });
      }
    });

    it('passes the upstream 404, 409 and 500 through with their bodies and headers (no envelope); hop-by-hop headers stay behind', async () => {
      for (const status of [404, 409, 500]) {
        const response = await fetch(url(`api/status/${status}`), { headers: { authorization: `Bearer ${token}` } });
        expect(response.status).to.equal(status);
        expect(await response.json()).to.deep.equal({ heard: { method: 'GET', url: `/svc/status/${status}`, body: '' }, status: String(status) });
        expect(response.headers.getSetCookie()).to.deep.equal(['a=1; Path=/', 'b=2; Path=/']);
        expect(response.headers.get('x-hop')).to.equal(null);
        expect(response.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
      }
    });

    it('appends a wildcard rest as received (percent-encoded segments kept) and refuses one that would climb', async () => {
      const encoded = await fetch(url('api/files/a%20b/c%2Fd.txt'), { headers: { authorization: `Bearer ${token}` } });
      expect(encoded.status).to.equal(200);
      expect(last().url).to.equal('/svc/files/a%20b/c%2Fd.txt');
      const before = rest.heard.length;
      const base = new URL(s.gateway.base).pathname;
      // `..;x` is `..` to Tomcat and Jetty (a path parameter after the dots).
      for (const climb of ['../../etc/passwd', '%2e%2e/%2e%2e/etc', 'x/..%2F..%2Fetc', '..;/..;/etc', 'x/..;/y', '%2e%2e;jsessionid=1/etc', 'x/.%2E;/y']) {
        const answer = await rawRequest(
          s.gateway.port,
          `GET ${base}/tk/app/inventory/api/${climb} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer.status, climb).to.equal(400);
        expect(JSON.parse(answer.body).error.details[0].field).to.equal('path.*');
      }
      expect(rest.heard.length, 'nothing reached the upstream').to.equal(before);
    });

    it('refuses a {name} value that is a dot segment (. or .., also percent-encoded in any case): 400 naming path.<name>', async () => {
      const before = rest.heard.length;
      const base = new URL(s.gateway.base).pathname;
      for (const value of ['..', '.', '%2e%2e', '%2E%2e', '.%2E', '%2e']) {
        const answer = await rawRequest(
          s.gateway.port,
          `GET ${base}/tk/app/inventory/hosts/${value} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer.status, value).to.equal(400);
        const error = JSON.parse(answer.body).error;
        expect(error.code, value).to.equal('invalid_payload');
        expect(error.details[0].field, value).to.equal('path.host');
      }
      expect(rest.heard.length, 'nothing reached the upstream').to.equal(before);
      // Dots inside a value are no segment of their own: still forwarded.
      expect((await fetch(url('hosts/web..1'), { headers: { authorization: `Bearer ${token}` } })).status).to.equal(200);
      expect(last().url).to.equal('/svc/hosts/web..1');
    });

    it('keeps a trailing slash, and rewrites a Location into the upstream to the gateway path (others as they are)', async () => {
      const auth = { authorization: `Bearer ${token}` };
      expect((await fetch(url('api/files/reports/'), { headers: auth })).status).to.equal(200);
      expect(last().url).to.equal('/svc/files/reports/');
      expect((await fetch(url('hosts/web-1/?x=1'), { headers: auth })).status).to.equal(200);
      expect(last().url).to.equal('/svc/hosts/web-1/?x=1');
      const gatewayPath = `${new URL(s.gateway.base).pathname}/tk/app/inventory/api`;
      const locations: Record<string, string> = {
        'redirect-absolute': `${gatewayPath}/reports/?page=2`,
        'redirect-path': `${gatewayPath}/reports/`,
        'redirect-outside': '/elsewhere/x',
        'redirect-away': 'https://example.com/x',
      };
      for (const [path, expected] of Object.entries(locations)) {
        const answer = await fetch(url(`api/${path}`), { headers: auth, redirect: 'manual' });
        expect(answer.status, path).to.equal(301);
        expect(answer.headers.get('location'), path).to.equal(expected);
      }
    });

    it("replaces the client's Forwarded and X-Real-IP with the gateway's own, as for X-Forwarded-*", async () => {
      const response = await fetch(url('hosts/web-1'), {
        headers: { authorization: `Bearer ${token}`, forwarded: 'for=203.0.113.9;proto=https', 'x-real-ip': '203.0.113.9' },
      });
      expect(response.status).to.equal(200);
      const { headers } = last();
      expect(headers['x-real-ip']).to.equal('127.0.0.1');
      expect(headers.forwarded).to.equal(`for=127.0.0.1;proto=http;host="${new URL(s.gateway.base).host}"`);
      expect(JSON.stringify(headers)).to.not.include('203.0.113.9');
    });

    it('sends Tkgate-Context (no payload), X-Request-Id, traceparent, X-Forwarded-*; never Authorization, Cookie or Tkgate-*', async () => {
      const response = await fetch(url('hosts/web-1?verbose=1'), {
        headers: { authorization: `Bearer ${token}`, cookie: 'session=secret', 'tkgate-context': 'forged', 'tkgate-user': 'root', 'x-custom': 'kept' },
      });
      expect(response.status).to.equal(200);
      const { headers, url: heardUrl } = last();
      expect(heardUrl, 'the path parameter put in for {host} of the URL').to.equal('/svc/hosts/web-1?verbose=1');
      expect(headers.authorization).to.equal(undefined);
      expect(headers.cookie).to.equal(undefined);
      expect(headers['tkgate-user']).to.equal(undefined);
      expect(headers['x-custom']).to.equal('kept');
      expect(headers['x-request-id']).to.equal(response.headers.get('x-request-id'));
      expect(headers.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      expect(headers['x-forwarded-for']).to.equal('127.0.0.1');
      expect(headers['x-forwarded-proto']).to.equal('http');
      expect(headers['x-forwarded-host']).to.equal(new URL(s.gateway.base).host);
      const context = JSON.parse(Buffer.from(String(headers['tkgate-context']), 'base64url').toString('utf8'));
      expect(context).to.include({ username: 'ops', user_id: s.ids.ops, request_id: response.headers.get('x-request-id') });
      expect(context.path_params).to.deep.equal({ host: 'web-1' });
      expect(context).to.not.have.property('payload');
    });

    it('sends the body after client_filter: JSON re-serialised after allowed_fields; a rule failure never reaches the upstream', async () => {
      const response = await call('POST', url('filtered'), { token, body: { name: 'lamp', secret: 'x' } });
      expect(response.status).to.equal(200);
      expect(JSON.parse(last().body)).to.deep.equal({ name: 'lamp' });
      expect(last().headers['content-type']).to.equal('application/json');
      const before = rest.heard.length;
      const refused = await call('POST', url('filtered'), { token, body: { name: 'far too long a name' } });
      expect(refused.status).to.equal(400);
      expect(refused.body.error.code).to.equal('invalid_payload');
      expect(rest.heard.length).to.equal(before);
    });

    it('passes a body of another allowed content type (text/plain, XML, octet-stream) as received; another type is 400', async () => {
      const bodies: Array<[string, Buffer]> = [
        ['text/plain; charset=utf-8', Buffer.from('plain text, not JSON {')],
        ['application/xml', Buffer.from('<?xml version="1.0"?><host name="web-1"/>')],
        ['application/octet-stream', Buffer.from([0, 255, 254, 1, 0x80, 10, 13])],
      ];
      for (const [contentType, bytes] of bodies) {
        const response = await fetch(url('documents'), {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
          body: bytes,
        });
        expect(response.status, contentType).to.equal(200);
        expect(last().bytes.equals(bytes), contentType).to.equal(true);
        expect(last().headers['content-type'], contentType).to.equal(contentType);
        expect(last().headers['content-length'], contentType).to.equal(String(bytes.length));
      }
      const before = rest.heard.length;
      const refused = await fetch(url('documents'), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'image/png' }, body: 'x' });
      expect(refused.status).to.equal(400);
      expect(((await refused.json()) as { error: { details: object[] } }).error.details[0]).to.include({
        field: 'content-type',
        rule: 'allowed_content_types',
      });
      expect(rest.heard.length).to.equal(before);
    });

    it('a method the endpoint does not list is 405; without a token 401, before anything reaches the upstream', async () => {
      const before = rest.heard.length;
      expect((await fetch(url('hosts/web-1'), { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status).to.equal(405);
      expect((await fetch(url('api/x'))).status).to.equal(401);
      expect(rest.heard.length).to.equal(before);
    });

    it('no answer in time is 504 upstream_timeout; no connection, or a malformed answer, is 502 upstream_error', async () => {
      const slow = await call('GET', url('slow'), { token });
      expect([slow.status, slow.body.error.code]).to.deep.equal([504, 'upstream_timeout']);
      const nobody = await call('GET', url('nobody'), { token });
      expect([nobody.status, nobody.body.error.code, nobody.body.error.details.reason]).to.deep.equal([502, 'upstream_error', 'connection']);
      for (const path of ['malformed', 'garbage']) {
        const answer = await call('GET', url(path), { token });
        expect([answer.status, answer.body.error.code, answer.body.error.details.reason], path).to.deep.equal([502, 'upstream_error', 'invalid_response']);
      }
    });

    it('an answer cut within its body reaches the client as far as it came, then its connection is cut', async () => {
      const base = new URL(s.gateway.base).pathname;
      const answer = await rawRequest(
        s.gateway.port,
        `GET ${base}/tk/app/inventory/cut HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer.status).to.equal(200);
      expect(answer.head.toLowerCase()).to.include('content-length: 100');
      expect(answer.body).to.equal('abc');
    });

    it('a client that leaves mid-download lets go of its place and its upstream exchange', async () => {
      const leaving = new AbortController();
      const download = await fetch(url(`single/big/${BIG}`), { headers: { authorization: `Bearer ${token}` }, signal: leaving.signal });
      expect(download.status).to.equal(200);
      await download.body!.getReader().read();
      leaving.abort();
      // The place is free once the gateway has seen the client go: within a generous deadline on a loaded machine.
      const deadline = Date.now() + 30_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await fetch(url('single/status/200'), { headers: { authorization: `Bearer ${token}` } })).status;
        if (status === 200) break;
        expect(status, 'busy while the download holds the place').to.equal(503);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).to.equal(200);
    });

    it('streams a 50 MB download with the gateway memory bounded (it does not grow with the size)', async () => {
      await (await fetch(url('api/status/200'), { headers: { authorization: `Bearer ${token}` } })).arrayBuffer();
      const growth50 = await downloadPeakGrowth(url(`api/big/${BIG}`), token, s.gateway.child.pid!, BIG);
      const growth150 = await downloadPeakGrowth(url(`api/big/${3 * BIG}`), token, s.gateway.child.pid!, 3 * BIG);
      if (process.env.TKGATE_TEST_VERBOSE) console.log(`RSS growth: 50 MB +${growth50.toFixed(1)} MB, 150 MB +${growth150.toFixed(1)} MB`);
      // Buffered whole, a download costs its size. Streamed, what shows is Node's HTTP client's fresh buffer per
      // socket read until GC catches up: seen at +30 to +44 MB for the first download (the heap growing to its
      // plateau), then +2 to +31 MB for the next, three times larger: flat in the size, never the size.
      expect(growth150).to.be.below(48);
    });
  });
}

describe('http endpoints: forward: request, config check', () => {
  const s = withDatabase(dialects[0]!, []);
  it('takes PUT, PATCH, DELETE, HEAD and OPTIONS only on a forwarding endpoint, and no passthrough there', async () => {
    const config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
    const dir = toolkitDir({
      'methods.yaml': [
        'name: methods',
        'type: app',
        'endpoints:',
        '  - { path: a, method: [GET, PUT], type: http, upstream: { url: "http://127.0.0.1:9/a" } }',
        '  - { path: b, method: DELETE, type: internal, handler: echo }',
        '  - { path: c, method: [GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS], type: http, upstream: { url: "http://127.0.0.1:9/c", forward: request } }',
        '  - { path: d, method: GET, type: http, upstream: { url: "http://127.0.0.1:9/d", forward: request, passthrough: true } }',
        '  - { path: "e/{id}", method: GET, type: http, upstream: { url: "http://127.0.0.1:9/e/{idd}", forward: request } }',
        '',
      ].join('\n'),
    });
    const result = await runCli(['config', 'check', dir, '--config', config]);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stdout.trim().split('\n')).to.deep.equal([
      'methods.yaml:4:30: endpoints.0.method.1 (GET,PUT a): PUT is not a method this http endpoint takes (GET, POST)',
      'methods.yaml:5:24: endpoints.1.method (DELETE b): DELETE is not a method this internal endpoint takes (GET, POST)',
      'methods.yaml:7:113: endpoints.3.upstream.passthrough (GET d): forward: request always streams the answer as it is; passthrough is for forward: context',
      "methods.yaml:8:65: endpoints.4.upstream.url (GET e/{id}): {idd} is not a parameter of the endpoint's path",
    ]);
  });
});
