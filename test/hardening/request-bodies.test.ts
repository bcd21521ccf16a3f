import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { call, toolkitClient, type Reply } from '../support/http.js';
import { rawRequest } from '../support/raw-http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * Hostile and broken request bodies: each is a 4xx naming the field, at once, never a 500 or a hang, and
 * the log says why without the body. Nothing here depends on the database: SQLite alone.
 */
const MARKER = 'body-marker-never-logged';
const echo = (path: string, extra: Record<string, unknown> = {}) => ({ path, method: ['GET', 'POST'], type: 'internal', handler: 'echo', ...extra });
const bodies = {
  name: 'bodies',
  type: 'app',
  endpoints: [
    echo('echo'),
    echo('needs-to-string', { client_filter: { required_fields: ['toString'] } }),
    echo('small', { client_filter: { max_body_bytes: 100 } }),
    // Nothing listens on port 9: a body that got through would be 502, not 400.
    { path: 'forward', method: 'POST', type: 'http', upstream: { url: 'http://127.0.0.1:9/', timeout: '2s' } },
    { path: 'run', method: 'POST', type: 'exec', command: ['/bin/true'], timeout: '5s' },
  ],
};

const nested = (depth: number) => `{"a":${'['.repeat(depth - 1)}"${MARKER}"${']'.repeat(depth - 1)}}`;
const json = { 'content-type': 'application/json' };
const form = { 'content-type': 'application/x-www-form-urlencoded' };

describe(`request bodies (${dialects[0]!.name})`, () => {
  const s = withGateway(
    dialects[0]!,
    [{ username: 'bob' }],
    { server: { port: 0, max_body_bytes: 16384 }, log: { level: 'debug' } },
    {
      toolkitsDir: toolkitDir({ 'bodies.yaml': bodies }),
      process: true, // stdout is scanned
    },
  );
  let token: string;
  before(async () => (token = await s.login('bob')));
  const client = () => toolkitClient(s.gateway.base, token);
  const url = (path: string) => `${s.gateway.base}/tk/app/bodies/${path}`;
  const refused = (reply: Reply, status: number, detail: Record<string, string>) => {
    expect(reply.status, JSON.stringify(reply.body)).to.equal(status);
    expect(reply.body.success).to.equal(false);
    expect(reply.body.error.details[0]).to.include(detail);
  };
  const rawPost = (path: string, headers: string[], body = '') =>
    rawRequest(
      s.gateway.port,
      [`POST /api/tk/app/bodies/${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${token}`, ...headers, '', body].join('\r\n'),
    );

  describe('prototype keys', () => {
    it('?__proto__=x&__proto__=y is refused, and never satisfies required_fields through inherited names', async () => {
      refused(await call('GET', `${url('needs-to-string')}?__proto__=x&__proto__=y`, { token }), 400, { field: '__proto__', rule: 'field_name' });
      refused(await client().get('bodies', 'needs-to-string'), 400, { field: 'toString', rule: 'required' });
      const sent = await client().get('bodies', 'needs-to-string', { toString: 'yes' });
      expect(sent.status).to.equal(200);
      expect(sent.body.data.payload).to.deep.equal({ toString: 'yes' });
    });

    it('refuses __proto__, constructor and prototype in query strings, forms and JSON at any depth', async () => {
      refused(await client().get('bodies', 'echo', { constructor: 'x' }), 400, { field: 'constructor' });
      refused(await client().get('bodies', 'echo', { prototype: 'x' }), 400, { field: 'prototype' });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: '__proto__=1&a=2', headers: form }), 400, { field: '__proto__' });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: 'constructor=1', headers: form }), 400, { field: 'constructor' });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: '{"a":{"b":[{"__proto__":{"x":1}}]}}', headers: json }), 400, {
        field: 'a.b.0.__proto__',
      });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: '{"\\u005f_proto__":{}}', headers: json }), 400, { field: '__proto__' });
      refused(await client().post('bodies', 'echo', { constructor: { prototype: 1 } }), 400, { field: 'constructor' });
      refused(await client().post('bodies', 'forward', { x: { prototype: 1 } }), 400, { field: 'x.prototype' });
      refused(await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'bob', password: 'x', constructor: 1 } }), 400, { field: 'constructor' });
      const plain = await client().post('bodies', 'echo', { proto: 1, constructors: [2], note: 'a prototype of it' });
      expect(plain.body.data.payload).to.deep.equal({ proto: 1, constructors: [2], note: 'a prototype of it' });
    });
  });

  describe('nesting', () => {
    it('refuses JSON nested deeper than 64 before parsing it, for every endpoint type', async () => {
      for (const path of ['forward', 'run', 'echo']) {
        refused(await client().post('bodies', path, undefined, { rawBody: nested(5000), headers: json }), 400, { field: 'body', rule: 'max_depth' });
      }
      refused(await client().post('bodies', 'echo', undefined, { rawBody: nested(65), headers: json }), 400, { field: 'body', rule: 'max_depth' });
      const deepest = await client().post('bodies', 'echo', undefined, { rawBody: nested(64), headers: json });
      expect(deepest.status, JSON.stringify(deepest.body)).to.equal(200);
      // Brackets inside strings are text, not nesting.
      const text = await client().post('bodies', 'echo', { s: '[{'.repeat(500) });
      expect(text.status).to.equal(200);
    });

    it('refuses 5,000+ deep JSON sent gzip-compressed too', async () => {
      const deep = gzipSync(`{"a":${'['.repeat(1000)}${']'.repeat(1000)}}`);
      refused(await client().post('bodies', 'run', undefined, { rawBody: deep, headers: { ...json, 'content-encoding': 'gzip' } }), 400, { rule: 'max_depth' });
    });
  });

  describe('encodings and framing', () => {
    it('answers 400 to a body that is not valid gzip or brotli, and reads one that is', async () => {
      const headers = { ...json, 'content-encoding': 'gzip' };
      refused(await client().post('bodies', 'echo', undefined, { rawBody: `{"a":"${MARKER}"}`, headers }), 400, { field: 'body', rule: 'encoding' });
      const whole = gzipSync(JSON.stringify({ a: MARKER.repeat(20) }));
      refused(await client().post('bodies', 'echo', undefined, { rawBody: whole.subarray(0, whole.length - 12), headers }), 400, {
        field: 'body',
        rule: 'encoding',
      });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: 'not brotli data at all', headers: { ...json, 'content-encoding': 'br' } }), 400, {
        rule: 'encoding',
      });
      const good = await client().post('bodies', 'echo', undefined, { rawBody: gzipSync('{"a":1}'), headers });
      expect(good.body.data.payload).to.deep.equal({ a: 1 });
      refused(await client().post('bodies', 'echo', undefined, { rawBody: '{}', headers: { ...json, 'content-encoding': 'compress' } }), 400, {
        field: 'content-encoding',
      });
    });

    it('caps the decompressed body too (413)', async () => {
      const bomb = gzipSync(JSON.stringify({ a: 'x'.repeat(1_000_000) }));
      expect(bomb.length).to.be.below(16384);
      const reply = await client().post('bodies', 'echo', undefined, { rawBody: bomb, headers: { ...json, 'content-encoding': 'gzip' } });
      expect(reply.status).to.equal(413);
      expect(reply.body.error.code).to.equal('payload_too_large');
    });

    it('answers a Content-Length of 2^31 or more with 413 at once, without waiting for the body', async () => {
      for (const length of [2 ** 31, 2 ** 32 + 5, 2 ** 53 + 2]) {
        const reply = await rawPost('echo', ['Content-Type: application/json', `Content-Length: ${length}`], '{"a":');
        expect(reply.status, reply.head).to.equal(413);
        expect(reply.head.toLowerCase()).to.include('connection: close');
        expect(JSON.parse(reply.body).error.code).to.equal('payload_too_large');
      }
      const endpointCap = await rawPost('small', ['Content-Type: application/json', `Content-Length: ${2 ** 31}`], '{"a":');
      expect(endpointCap.status).to.equal(400);
      expect(JSON.parse(endpointCap.body).error.details[0]).to.include({ field: 'body', rule: 'max_body_bytes' });
    });

    it('answers a chunked body over the cap with 413, and an empty chunked JSON body as {}', async () => {
      const chunk = 'x'.repeat(20000);
      const over = await rawPost(
        'echo',
        ['Content-Type: application/json', 'Transfer-Encoding: chunked'],
        `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
      );
      expect(over.status).to.equal(413);
      const empty = await rawPost('echo', ['Content-Type: application/json', 'Transfer-Encoding: chunked', 'Connection: close'], '0\r\n\r\n');
      expect(empty.status, empty.body).to.equal(200);
      expect(JSON.parse(empty.body).data.payload).to.deep.equal({});
      const zero = await client().post('bodies', 'echo', undefined, { rawBody: '', headers: json });
      expect(zero.status).to.equal(200);
      expect(zero.body.data.payload).to.deep.equal({});
    });

    it('refuses a charset other than UTF-8', async () => {
      refused(
        await client().post('bodies', 'echo', undefined, { rawBody: '{"a":1}', headers: { 'content-type': 'application/json; charset=iso-8859-1' } }),
        400,
        {
          field: 'content-type',
          rule: 'charset',
        },
      );
      const utf8 = await client().post('bodies', 'echo', undefined, { rawBody: '{"a":"é"}', headers: { 'content-type': 'application/json; charset=UTF-8' } });
      expect(utf8.body.data.payload).to.deep.equal({ a: 'é' });
    });
  });

  // Last: mocha runs a suite's own tests before its nested suites.
  describe('logs', () => {
    it('logs each refusal without the body, without a stack and below error', () => {
      const refusals = s.gateway.logs.filter((line) => line.msg === 'request refused');
      expect(refusals.length).to.be.above(10);
      expect(s.gateway.output()).not.to.include(MARKER);
      expect(s.gateway.output()).not.to.include('"stack"');
      expect(s.gateway.logs.filter((line) => line.level === 'error')).to.deep.equal([]);
    });
  });
});
