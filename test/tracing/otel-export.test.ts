import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { toolkitClient } from '../support/http.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

/**
 * OpenTelemetry spans as a collector receives them: tkgate with tracing.enabled exports over OTLP/HTTP to
 * a loopback receiver that decodes the JSON and keeps the spans. The tree (server span, the database
 * reads of steps 5 and 6, the endpoint's execution, password hashing at login), the attributes, and that
 * no token, body, query string or password reaches any attribute.
 */
const SERVER = 2;
const CLIENT = 3;
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';
const BODY_SECRET = 'body-secret-4711';
const QUERY_SECRET = 'query-secret-0815';
const UPSTREAM_SECRET = 'upstream-key-1234';

const receiver: OtlpReceiver = await startOtlpReceiver();
after(() => receiver.close());

/** A JSON upstream that keeps the traceparent of each call. */
const seenTraceparents: string[] = [];
const upstream = http.createServer((req, res) => {
  seenTraceparents.push(req.headers.traceparent as string);
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => upstream.close(resolve)));
const upstreamOrigin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const emptyJson = scriptWriter('tkgate-otel-bin-')('empty-json', 'printf "{}"');

const shop = {
  name: 'shop',
  type: 'app',
  endpoints: [
    { path: 'me', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'users', columns: ['username'], where: { id: '$context.user_id' } }] },
    echoEndpoint({ path: 'with-context', inject_db_context: ['users.username as login'] }),
    { path: 'upstream', method: 'POST', type: 'http', upstream: { url: `${upstreamOrigin}/data?api_key=${UPSTREAM_SECRET}`, timeout: '5s' } },
    { path: 'run', method: 'POST', type: 'exec', command: [emptyJson], timeout: '5s' },
  ],
};

const tracing = (extra: Record<string, unknown> = {}) => ({ tracing: { enabled: true, endpoint: receiver.url, ...extra } });
const spansOf = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
const waitForSpans = (what: string, find: () => ReceivedSpan | undefined) => eventually(what, find, 30_000);

for (const dialect of dialects) {
  describe(`OpenTelemetry spans (${dialect.name})`, () => {
    // Each suite's gateway names itself: the receiver is shared.
    const serviceName = `tkgate-test-${dialect.name}`;
    const s = withGateway(dialect, [{ username: 'olga' }], tracing({ service_name: serviceName }), { toolkitsDir: toolkitDir({ 'shop.yaml': shop }) });
    const mine = () => receiver.spans.filter((span) => span.resource['service.name'] === serviceName);
    const spansOf = (traceId: string) => mine().filter((span) => span.traceId === traceId);
    const traceIdOf = async (requestId: string | null) =>
      (await eventually('the access line', () => s.gateway.logs.find((line) => line.msg === 'request' && line.request_id === requestId))).trace_id as string;

    it("exports a server span per request with its children, continuing the caller's trace, and never a secret", async () => {
      const token = await s.login('olga');
      const shopClient = toolkitClient(s.gateway.base, token);
      const headers = { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` };
      const me = await shopClient.get('shop', 'me', { q: QUERY_SECRET }, { headers });
      expect(me.status).to.equal(200);
      expect(await traceIdOf(me.headers.get('x-request-id'))).to.equal(TRACE_ID);
      expect((await shopClient.post('shop', 'with-context', { note: BODY_SECRET })).status).to.equal(200);
      expect((await shopClient.post('shop', 'upstream', { note: BODY_SECRET })).status).to.equal(200);
      expect((await shopClient.post('shop', 'run', { note: BODY_SECRET })).status).to.equal(200);
      // db.system.name as the semantic conventions spell each database.
      const system = { sqlite: 'sqlite', mysql: 'mysql', postgres: 'postgresql' }[dialect.name];

      // GET me: the server span's parent is the caller's span; the group read and the query are its children.
      const server = await waitForSpans('the server span of GET me', () => spansOf(TRACE_ID).find((span) => span.kind === SERVER));
      expect(server.parentSpanId).to.equal(PARENT_ID);
      expect(server.name).to.equal('GET tk/app/shop/me');
      expect(server.attributes).to.deep.equal({
        'http.request.method': 'GET',
        'http.route': 'tk/app/shop/me',
        'http.response.status_code': 200,
        'tkgate.toolkit': 'shop',
        'tkgate.endpoint': 'me',
        'enduser.id': String(s.ids.olga),
      });
      expect(server.resource['service.name']).to.equal(serviceName);
      const children = await waitForSpans('the children of GET me', () => {
        const found = spansOf(TRACE_ID).filter((span) => span.parentSpanId === server.spanId);
        return found.length >= 2 ? (found as unknown as ReceivedSpan) : undefined;
      });
      const byName = Object.fromEntries((children as unknown as ReceivedSpan[]).map((span) => [span.name, span]));
      expect(byName.group?.attributes['db.system.name']).to.equal(system);
      expect(byName.internal?.attributes).to.deep.equal({ 'db.system.name': system });

      // The login: its hashing is a child of the login's server span.
      const hashing = await waitForSpans('the password hashing span', () => mine().find((span) => span.name === 'password-hash'));
      const login = mine().find((span) => span.spanId === hashing.parentSpanId)!;
      expect(login.attributes).to.include({ 'http.route': 'auth/login', 'http.response.status_code': 200 });

      // Step 5's read, under the server span of POST with-context.
      const contextRead = await waitForSpans('the db-context span', () => mine().find((span) => span.name === 'db-context'));
      expect(contextRead.attributes['db.system.name']).to.equal(system);
      expect(mine().find((span) => span.spanId === contextRead.parentSpanId)?.attributes['http.route']).to.equal('tk/app/shop/with-context');

      // The upstream call: an http client span whose id is the parent id the upstream received.
      const call = await waitForSpans('the upstream client span', () => mine().find((span) => span.kind === CLIENT));
      expect(call.attributes).to.deep.equal({
        'http.request.method': 'POST',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(upstreamOrigin).port),
        'url.full': `${upstreamOrigin}/data`,
        'http.response.status_code': 200,
      });
      expect(seenTraceparents.at(-1)).to.equal(`00-${call.traceId}-${call.spanId}-01`);

      // The command.
      const command = await waitForSpans('the exec span', () => mine().find((span) => span.name.startsWith('exec ')));
      expect(command.attributes).to.deep.equal({ 'process.executable.name': 'empty-json', 'process.exit.code': 0 });

      const everything = receiver.bodies.join('\n');
      for (const secret of [token, BODY_SECRET, QUERY_SECRET, UPSTREAM_SECRET, 'aglo-pw']) expect(everything).not.to.include(secret);
    });
  });
}

describe('OpenTelemetry sampling and an absent collector', () => {
  const dialect = dialects[0]!;

  describe('tracing.sample_ratio 0', () => {
    const s = withGateway(dialect, [{ username: 'sam' }], tracing({ sample_ratio: 0 }), { toolkitsDir: toolkitDir({ 'shop.yaml': shop }) });

    it('records no new trace, and follows a caller that sampled (parent-based)', async () => {
      const shopClient = toolkitClient(s.gateway.base, await s.login('sam'));
      const unsampled = await shopClient.get('shop', 'me');
      const traceId = (await eventually('the access line', () => s.gateway.logs.find((line) => line.request_id === unsampled.headers.get('x-request-id'))))
        .trace_id as string;
      const sampledTrace = 'f'.repeat(31) + '1';
      expect((await shopClient.get('shop', 'me', {}, { headers: { traceparent: `00-${sampledTrace}-${PARENT_ID}-01` } })).status).to.equal(200);
      await waitForSpans('the sampled request', () => spansOf(sampledTrace).find((span) => span.kind === SERVER));
      expect(spansOf(traceId)).to.deep.equal([]);
      // A caller that did not sample is not recorded either, but its trace goes on.
      expect((await shopClient.get('shop', 'me', {}, { headers: { traceparent: `00-${'e'.repeat(32)}-${PARENT_ID}-00` } })).status).to.equal(200);
    });
  });

  describe('a collector that does not answer', () => {
    const closedPort = 'http://127.0.0.1:9/v1/traces';
    const s = withGateway(
      dialect,
      [{ username: 'nia' }],
      { tracing: { enabled: true, endpoint: closedPort } },
      { toolkitsDir: toolkitDir({ 'shop.yaml': shop }) },
    );

    it('answers every request, and logs the failed export once a minute', async () => {
      const shopClient = toolkitClient(s.gateway.base, await s.login('nia'));
      for (let i = 0; i < 5; i++) expect((await shopClient.get('shop', 'me')).status).to.equal(200);
      const failures = () => s.gateway.logs.filter((line) => line.msg === 'trace export failed; spans dropped');
      const first = await eventually('the export failure logged', () => failures()[0], 60_000);
      expect(first).to.include({ level: 'warn', collector: 'http://127.0.0.1:9' });
      for (let i = 0; i < 5; i++) expect((await shopClient.get('shop', 'me')).status).to.equal(200);
      // Later batches fail too (the next export runs within seconds), and are not logged again within the minute.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(failures()).to.have.length(1);
    });
  });
});
