import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { onRequests } from './raw-requests.js';
import { runConfig, transportRuns } from './transport-runs.js';

/**
 * An upstream that sends bytes after a complete answer (a buggy handler writing past its
 * Content-Length, then a whole second answer) must never make one user's answer reach another. A raw
 * keep-alive upstream answers each request with the caller's username and the request's X-Request-Id in
 * the body, and misbehaves on some paths:
 * - `same-write`: a second full answer right behind the first, in the same write;
 * - `deferred`: the second answer held back and written when the connection's next request arrives, just
 *   before that request's own answer: on the wire it is indistinguishable from the answer to the next
 *   request, whoever sent it;
 * - `echo-deferred`: the same, but every answer also echoes X-Request-Id as a header (an upstream the
 *   gateway can bind answers to requests with).
 * Two users call the same endpoint in turn for 20 rounds, in JSON and passthrough mode, on every transport:
 * each gets its own answer or a 502, never the other's.
 */
interface Upstream {
  url: string;
  /** Connections accepted, and requests per connection. */
  connections: number[];
  close(): void;
}

const answer = (body: string, headers: string[] = []) =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${headers.map((line) => `${line}\r\n`).join('')}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** An upstream of one behaviour (one port each: a connection one of them spoiled never serves another's test). */
async function startMisbehavingUpstream(behaviour: string): Promise<Upstream> {
  const state: Upstream = { url: '', connections: [], close: () => undefined };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const index = state.connections.push(0) - 1;
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    /** A second answer held back for the connection's next request (`deferred`). */
    let held: string | undefined;
    onRequests(socket, (_path, head, body) => {
      state.connections[index]!++;
      const requestId = /\r\nx-request-id: *([^\r]*)/i.exec(head)?.[1] ?? '';
      // The context: POSTed as JSON (forward: context), or in Tkgate-Context (forward: request).
      const forwarded = /\r\ntkgate-context: *([^\r]*)/i.exec(head)?.[1];
      const context = forwarded ? Buffer.from(forwarded, 'base64url').toString() : body.toString();
      const user = (JSON.parse(context) as { username?: string }).username;
      const mine = answer(JSON.stringify({ user, request_id: requestId }), behaviour.startsWith('echo') ? [`X-Request-Id: ${requestId}`] : []);
      const out = (held ?? '') + mine;
      held = undefined;
      if (behaviour === 'same-write') socket.write(out + mine);
      else if (behaviour.endsWith('deferred')) {
        socket.write(out);
        held = mine;
      } else socket.write(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => {
    server.close();
    for (const socket of sockets) socket.destroy();
  };
  return state;
}

const PATHS = ['same-write', 'deferred', 'echo-deferred', 'echo'];
const upstreams = Object.fromEntries(await Promise.all(PATHS.map(async (name) => [name, await startMisbehavingUpstream(name)] as const)));
after(() => Object.values(upstreams).forEach((upstream) => upstream.close()));
const toolkit = {
  name: 'desync',
  type: 'app',
  endpoints: [
    ...PATHS.flatMap((name) =>
      [false, true].map((passthrough) => ({
        path: `${passthrough ? 'raw' : 'json'}/${name}`,
        method: 'GET',
        type: 'http',
        upstream: { url: `${upstreams[name]!.url}/${name}`, timeout: '5s', passthrough },
      })),
    ),
    ...PATHS.map((name) => ({
      path: `forwarded/${name}`,
      method: 'GET',
      type: 'http',
      upstream: { url: `${upstreams[name]!.url}/${name}`, timeout: '5s', forward: 'request' },
    })),
  ],
};

const ROUNDS = 20;

for (const run of transportRuns) {
  describe(`http endpoints: an upstream's stray answers never reach another user (${run.dialect.name}, ${run.name})`, () => {
    const s = withGateway(
      run.dialect,
      [
        { username: 'ana', power: 7 },
        { username: 'bo', power: 7 },
      ],
      runConfig(run),
      { toolkitsDir: toolkitDir({ 'desync.yaml': toolkit }) },
    );

    /** One call: the status, the answer's user and request id as the upstream wrote them, and the gateway's request id. */
    const call = async (token: string, path: string) => {
      const response = await fetch(`${s.gateway.base}/tk/app/desync/${path}`, { headers: { authorization: `Bearer ${token}` } });
      const text = await response.text();
      const own = response.headers.get('x-request-id');
      if (response.status !== 200) {
        const { error } = JSON.parse(text) as { error: { code: string; details: { reason: string } } };
        return { status: response.status, own, code: error.code, reason: error.details.reason };
      }
      const parsed = JSON.parse(text) as { data?: { user: string; request_id: string }; user?: string; request_id?: string };
      const got = path.startsWith('json/') ? parsed.data! : parsed;
      return { status: 200, own, user: got.user, requestId: got.request_id };
    };

    // forward: request has one client of its own (Node's http agents, one pair per user), whatever the transport.
    if (run === transportRuns[0])
      for (const name of ['same-write', 'deferred', 'echo-deferred']) {
        it(`forward: request, ${name}: ${ROUNDS} rounds of two users, each gets only its own answers (or 502)`, async () => {
          const tokens = { ana: await s.login('ana'), bo: await s.login('bo') };
          const wrong: string[] = [];
          let answered = 0;
          for (let round = 0; round < ROUNDS; round++) {
            for (const user of ['ana', 'bo'] as const) {
              const result = await call(tokens[user], `forwarded/${name}`);
              if (result.status !== 200) {
                expect(result, `${user}, round ${round}`).to.include({ status: 502, code: 'upstream_error' });
                continue;
              }
              answered++;
              if (result.user !== user) wrong.push(`round ${round}: ${user} got ${result.user}'s answer`);
            }
          }
          expect(wrong, `${wrong.length} of ${2 * ROUNDS} answers went astray`).to.deep.equal([]);
          expect(answered, 'answers that came through').to.be.greaterThan(0);
        });
      }

    if (run === transportRuns[0])
      it('forward: request: a well-behaved upstream still gets its connections reused, one per user', async () => {
        const tokens = { ana: await s.login('ana'), bo: await s.login('bo') };
        const upstream = upstreams.echo!;
        const before = upstream.connections.length;
        for (let round = 0; round < 10; round++) {
          for (const user of ['ana', 'bo'] as const) {
            const result = await call(tokens[user], 'forwarded/echo');
            expect(result, `${user}, round ${round}`).to.include({ status: 200, user, requestId: result.own });
          }
        }
        // One connection per user at most (a kept one may be closed by a timer between two calls on a loaded machine).
        expect(upstream.connections.length - before, 'connections opened for 20 calls').to.be.at.most(4);
      });

    for (const mode of ['json', 'raw'] as const) {
      const transport = mode === 'json' ? run.json : run.passthrough;
      for (const name of ['same-write', 'deferred', 'echo-deferred']) {
        it(`${mode === 'json' ? 'JSON' : 'passthrough'} through ${transport}, ${name}: ${ROUNDS} rounds of two users, each gets only its own answers (or 502)`, async () => {
          const tokens = { ana: await s.login('ana'), bo: await s.login('bo') };
          const wrong: string[] = [];
          const reasons = new Set<string>();
          let answered = 0;
          for (let round = 0; round < ROUNDS; round++) {
            for (const user of ['ana', 'bo'] as const) {
              const result = await call(tokens[user], `${mode}/${name}`);
              if (result.status !== 200) {
                expect(result, `${user}, round ${round}`).to.include({ status: 502, code: 'upstream_error' });
                reasons.add(result.reason!);
                continue;
              }
              answered++;
              if (result.user !== user) wrong.push(`round ${round}: ${user} got ${result.user}'s answer`);
              // An upstream that echoes X-Request-Id is bound to the request: not even one's own earlier answer.
              else if (name.startsWith('echo') && result.requestId !== result.own) wrong.push(`round ${round}: ${user} got the answer to ${result.requestId}`);
            }
          }
          expect(wrong, `${wrong.length} of ${2 * ROUNDS} answers went astray`).to.deep.equal([]);
          expect(answered, 'answers that came through').to.be.greaterThan(0);
          // Out of turn on the user's own connection, the stray answer names the earlier request: refused.
          if (name === 'echo-deferred') expect([...reasons], '502 reasons').to.deep.equal(['request_id_mismatch']);
        });
      }

      it(`${mode === 'json' ? 'JSON' : 'passthrough'} through ${transport}: a well-behaved upstream still gets its connections reused`, async () => {
        const tokens = { ana: await s.login('ana'), bo: await s.login('bo') };
        const upstream = upstreams.echo!;
        const before = upstream.connections.length;
        const requestsBefore = upstream.connections.reduce((sum, count) => sum + count, 0);
        for (let round = 0; round < 10; round++) {
          for (const user of ['ana', 'bo'] as const) {
            const result = await call(tokens[user], `${mode}/echo`);
            expect(result, `${user}, round ${round}`).to.include({ status: 200, user, requestId: result.own });
          }
        }
        expect(upstream.connections.reduce((sum, count) => sum + count, 0) - requestsBefore, 'requests').to.equal(20);
        // One connection per user at most (a kept one may be closed by a timer between two calls on a loaded machine).
        expect(upstream.connections.length - before, 'connections opened for 20 calls').to.be.at.most(4);
      });
    }
  });
}
