import { expect } from 'chai';
import { scriptWriter } from '../support/executables.js';
import { toolkitClient } from '../support/http.js';
import { eventually } from '../support/eventually.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { runConfig, transportRuns } from '../http/transport-runs.js';

/**
 * W3C Trace Context through the public surface: what a caller sends in `traceparent` and `tracestate`,
 * what every kind of upstream receives (JSON calls through undici or got, passthrough downloads through
 * the gateway's own reader), what an exec command finds in its environment, and the access line's trace_id.
 * tracing.enabled stays false here: the trace context is propagated whether spans are recorded or not.
 */
const upstream: Upstream = await startUpstream(1024);
after(() => upstream.close());

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const TRACEPARENT_FORMAT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

const showTrace = scriptWriter('tkgate-trace-bin-')('show-trace', 'printf \'{"traceparent":"%s","tracestate":"%s"}\' "$TRACEPARENT" "$TRACESTATE"');

const traced = {
  name: 'traced',
  type: 'app',
  endpoints: [
    { path: 'json', method: ['GET', 'POST'], type: 'http', upstream: { url: `${upstream.url}/json`, timeout: '5s' } },
    { path: 'file', method: ['GET', 'POST'], type: 'http', upstream: { url: `${upstream.url}/file`, timeout: '5s', passthrough: true } },
    // An operator's TRACEPARENT in env is replaced by the gateway's.
    {
      path: 'exec',
      method: ['GET', 'POST'],
      type: 'exec',
      command: [showTrace],
      env: { TRACEPARENT: 'configured', TRACESTATE: 'configured=1' },
      timeout: '5s',
    },
  ],
};

/** The trace context the upstream saw on its last request to `path`. */
function lastSeen(path: string): { traceparent: string; tracestate: string | undefined; traceId: string; parentId: string } {
  const seen = upstream.requests.filter((request) => request.url.startsWith(path)).at(-1)!;
  const traceparent = seen.headers.traceparent as string;
  expect(traceparent, `traceparent at ${path}`).to.match(TRACEPARENT_FORMAT);
  const [, traceId, parentId] = TRACEPARENT_FORMAT.exec(traceparent)!;
  return { traceparent, tracestate: seen.headers.tracestate as string | undefined, traceId: traceId!, parentId: parentId! };
}

for (const run of transportRuns) {
  describe(`trace context (${run.dialect.name}, ${run.name})`, () => {
    const s = withGateway(run.dialect, [{ username: 'tess' }], runConfig(run), { toolkitsDir: toolkitDir({ 'traced.yaml': traced }) });
    const client = async () => toolkitClient(s.gateway.base, await s.login('tess'));
    const accessLine = (requestId: string | null) =>
      eventually('the access line', () => s.gateway.logs.find((line) => line.msg === 'request' && line.request_id === requestId));

    for (const path of ['json', 'file']) {
      it(`continues a valid traceparent to the upstream (${path}: same trace id, the gateway's own parent id, tracestate passed on)`, async () => {
        const c = await client();
        const reply = await c.post('traced', path, { q: 1 }, { headers: { traceparent: TRACEPARENT, tracestate: 'vendor=abc, other=x y' } });
        expect(reply.status).to.equal(200);
        const seen = lastSeen(`/${path}`);
        expect(seen.traceId).to.equal(TRACE_ID);
        expect(seen.parentId).not.to.equal(PARENT_ID);
        expect(seen.traceparent.endsWith('-01')).to.equal(true, 'the caller sampled: the flag is passed on');
        expect(seen.tracestate).to.equal('vendor=abc,other=x y');
        expect((await accessLine(reply.headers.get('x-request-id'))).trace_id).to.equal(TRACE_ID);
      });
    }

    it('gives every upstream call a new parent id within the same trace', async () => {
      const c = await client();
      await c.post('traced', 'json', {}, { headers: { traceparent: TRACEPARENT } });
      const first = lastSeen('/json');
      await c.post('traced', 'json', {}, { headers: { traceparent: TRACEPARENT } });
      const second = lastSeen('/json');
      expect(second.traceId).to.equal(first.traceId);
      expect(second.parentId).not.to.equal(first.parentId);
    });

    for (const [what, invalid] of [
      ['all-zero trace id', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
      ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
      ['version ff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
      ['trailing data on version 00', `${TRACEPARENT}-extra`],
      ['two traceparent values', `${TRACEPARENT}, 00-${'1'.repeat(32)}-${PARENT_ID}-01`],
    ] as const) {
      it(`restarts the trace on an invalid traceparent (${what}) and drops the tracestate`, async () => {
        const c = await client();
        const reply = await c.post('traced', 'json', {}, { headers: { traceparent: invalid, tracestate: 'vendor=abc' } });
        expect(reply.status).to.equal(200);
        const seen = lastSeen('/json');
        expect(seen.traceId).not.to.equal(TRACE_ID);
        expect(seen.traceId).not.to.equal('0'.repeat(32));
        expect(seen.tracestate).to.equal(undefined);
        expect((await accessLine(reply.headers.get('x-request-id'))).trace_id).to.equal(seen.traceId);
      });
    }

    it('starts a new trace without a traceparent, and never passes a tracestate on alone', async () => {
      const c = await client();
      const reply = await c.post('traced', 'file', {}, { headers: { tracestate: 'vendor=abc' } });
      expect(reply.status).to.equal(200);
      const seen = lastSeen('/file');
      expect(seen.tracestate).to.equal(undefined);
      // A new trace's id is the request id's 32 hex digits.
      expect(seen.traceId).to.equal(reply.headers.get('x-request-id')!.replaceAll('-', ''));
      expect((await accessLine(reply.headers.get('x-request-id'))).trace_id).to.equal(seen.traceId);
    });

    it('drops a tracestate that breaks the grammar, keeping the trace', async () => {
      const c = await client();
      await c.post('traced', 'json', {}, { headers: { traceparent: TRACEPARENT, tracestate: 'good=1,Bad=2' } });
      const seen = lastSeen('/json');
      expect(seen.traceId).to.equal(TRACE_ID);
      expect(seen.tracestate).to.equal(undefined);
    });

    it("gives an exec command TRACEPARENT and TRACESTATE, replacing the configuration's", async () => {
      const c = await client();
      const reply = await c.post('traced', 'exec', {}, { headers: { traceparent: TRACEPARENT, tracestate: 'vendor=abc' } });
      expect(reply.status).to.equal(200);
      const [, traceId, parentId] = TRACEPARENT_FORMAT.exec(reply.body.data.traceparent) ?? [];
      expect(traceId).to.equal(TRACE_ID);
      expect(parentId).to.not.equal(PARENT_ID);
      expect(reply.body.data.tracestate).to.equal('vendor=abc');
      const fresh = await c.post('traced', 'exec', {});
      expect(fresh.body.data.traceparent).to.match(TRACEPARENT_FORMAT);
      expect(fresh.body.data.tracestate).to.equal('');
      expect((await accessLine(fresh.headers.get('x-request-id'))).trace_id).to.equal(TRACEPARENT_FORMAT.exec(fresh.body.data.traceparent)![1]);
    });
  });
}
