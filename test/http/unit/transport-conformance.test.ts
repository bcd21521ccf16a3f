import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { notSent, readerTransport, undiciTransport, UpstreamFailure, type UpstreamRequest, type UpstreamTransport } from '@tkgate/plugin-http/upstream';
import { eventually } from '../../support/eventually.js';
import { bodyOf } from '../../support/upstream-bodies.js';
import { onRequests } from '../raw-requests.js';

/**
 * One suite, run against each upstream transport through the one interface (upstream-transport.ts): undici
 * and the gateway's own HTTP/1.1 reader must answer alike and fail alike, in the one vocabulary of
 * UpstreamFailure.reason. A raw loopback upstream, in process.
 */
const transports: Array<[string, () => UpstreamTransport]> = [
  ['undici', undiciTransport],
  ['reader', readerTransport],
];

const JSON_BODY = '{"ok":true}';
const answers: Record<string, string> = {
  '/json': `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${JSON_BODY.length}\r\n\r\n${JSON_BODY}`,
  '/status-500': 'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nboom',
  '/large': `HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n${'x'.repeat(2000)}`,
  '/large-chunked': `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n${'x'.repeat(2000)}\r\n0\r\n\r\n`,
  '/chunked': 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
  '/both': 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  '/bad-chunk': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
  '/switch': 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  '/gzip-chunked': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  '/cut-post': 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}',
};
/** An answer naming the connection it came on (its number in order of acceptance), with extra header lines. */
const onConnection = (connection: number, headers: string[] = [], extra = '') => {
  const body = JSON.stringify({ connection, ...(extra ? { extra } : {}) });
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${headers.map((line) => `${line}\r\n`).join('')}Content-Length: ${body.length}\r\n\r\n${body}`;
};
/** Larger than the loopback sockets' buffers hold: a reader that stops reading makes the transport stop too. */
const BIG = 24 * 1024 * 1024;

describe('upstream transports: one conformance suite', () => {
  const seen = new Map<string, number>();
  const sockets = new Set<net.Socket>();
  /** Connections accepted so far, and the numbers of those closed. */
  let accepted = 0;
  const closed = new Set<number>();
  const server = net.createServer((socket) => {
    const connection = ++accepted;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closed.add(connection);
    });
    socket.on('error', () => undefined);
    const carried = new Set<string>();
    onRequests(socket, (path, head) => {
      seen.set(path, (seen.get(path) ?? 0) + 1);
      // Answers that name their connection, for the keep-alive cases; /echo-id and /other-id echo an X-Request-Id.
      const requestId = /\r\nx-request-id: *([^\r]*)/i.exec(head)?.[1] ?? '';
      if (path === '/connection') return void socket.write(onConnection(connection));
      if (path === '/echo-id') return void socket.write(onConnection(connection, [`X-Request-Id: ${requestId}`]));
      if (path === '/other-id') return void socket.write(onConnection(connection, ['X-Request-Id: another-request']));
      // A second answer right behind the first, or once the first has been read (while the connection is idle).
      if (path === '/stray-same') return void socket.write(onConnection(connection) + onConnection(connection, [], 'stray'));
      if (path === '/stray-later') {
        socket.write(onConnection(connection));
        return void setTimeout(() => socket.write(onConnection(connection, [], 'stray')), 50);
      }
      // /slow never answers; /cut-post closes a kept connection once the request is read (it reached the upstream).
      if (path === '/slow' || (path === '/cut-post' && carried.has(path))) {
        if (path === '/cut-post') socket.destroy();
        return;
      }
      carried.add(path);
      // /stall: a head and the first bytes of a longer body, then silence.
      if (path === '/stall') return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst');
      if (path === '/big') return void socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG}\r\n\r\n`), Buffer.alloc(BIG, 'x')]));
      socket.write(answers[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    });
  });
  let base = '';
  let refused = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // A port that was free a moment ago: nothing listens there.
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    refused = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/`;
    await new Promise((resolve) => probe.close(resolve));
  });
  after(() => {
    server.close();
    for (const socket of sockets) socket.destroy();
  });

  /** A call as proxy.ts makes one; `controller.abort()` plays the client going away. */
  const requestTo = (
    url: string,
    options: { timeoutMs?: number; streamed?: boolean; controller?: AbortController; group?: string; caller?: number; requestId?: string } = {},
  ): UpstreamRequest => {
    const controller = options.controller ?? new AbortController();
    return {
      url,
      headers: { 'content-type': 'application/json', ...(options.requestId ? { 'x-request-id': options.requestId } : {}) },
      body: '{"q":1}',
      timeoutMs: options.timeoutMs ?? 5000,
      streamed: options.streamed ?? false,
      connectionGroup: options.group ?? '',
      caller: options.caller ?? 1,
      signal: controller.signal,
      whenClientGone(listener) {
        controller.signal.addEventListener('abort', listener, { once: true });
        return () => controller.signal.removeEventListener('abort', listener);
      },
    };
  };
  /** The reason the call failed with (and that it failed with an UpstreamFailure). */
  const reasonOf = async (call: Promise<unknown>): Promise<string> => {
    const err = await call.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(err, 'the call failed').to.be.instanceOf(UpstreamFailure);
    return (err as UpstreamFailure).reason;
  };

  for (const [name, make] of transports) {
    describe(name, () => {
      let transport: UpstreamTransport;
      before(() => (transport = make()));
      after(() => transport.close());

      it('reads a whole 2xx answer, and a non-2xx one as its status without a body', async () => {
        expect(await transport.fetchWhole(requestTo(`${base}/json`), 1000)).to.deep.equal({ status: 200, body: Buffer.from(JSON_BODY) });
        expect(await transport.fetchWhole(requestTo(`${base}/status-500`), 1000)).to.deep.equal({ status: 500, body: Buffer.alloc(0) });
      });

      it('refuses a whole answer over the limit (too_large), declared or chunked, with its status', async () => {
        for (const path of ['/large', '/large-chunked']) {
          const err = await transport.fetchWhole(requestTo(`${base}${path}`), 1000).catch((thrown: unknown) => thrown);
          expect(err, path).to.be.instanceOf(UpstreamFailure).and.include({ reason: 'too_large', upstreamStatus: 200 });
        }
      });

      it('streams an answer with its status, headers and exact length', async () => {
        const response = await transport.post(requestTo(`${base}/json`, { streamed: true }));
        expect(response.status).to.equal(200);
        expect(response.headers['content-type']).to.equal('application/json');
        expect(response.contentLength).to.equal(JSON_BODY.length);
        expect(await bodyOf(response)).to.equal(JSON_BODY);
        const chunked = await transport.post(requestTo(`${base}/chunked`, { streamed: true }));
        expect(chunked.contentLength).to.equal(undefined);
        expect(await bodyOf(chunked)).to.equal('hello world');
      });

      it('classifies its failures alike: timeout, connection, invalid_response, aborted', async () => {
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/slow`, { timeoutMs: 300 }), 1000))).to.equal('timeout');
        expect(await reasonOf(transport.post(requestTo(`${base}/slow`, { timeoutMs: 300, streamed: true })))).to.equal('timeout');
        expect(await reasonOf(transport.fetchWhole(requestTo(refused), 1000))).to.equal('connection');
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/both`), 1000))).to.equal('invalid_response');
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/bad-chunk`), 1000))).to.equal('invalid_response');
        // Streamed: the answer is handed on only once its first body bytes are read, so a malformed first chunk fails the call.
        expect(await reasonOf(transport.post(requestTo(`${base}/bad-chunk`, { streamed: true })))).to.equal('invalid_response');
        // An unasked 101 at once, in both modes.
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/switch`, { timeoutMs: 5000 }), 1000))).to.equal('invalid_response');
        expect(await reasonOf(transport.post(requestTo(`${base}/switch`, { timeoutMs: 5000, streamed: true })))).to.equal('invalid_response');
        // A transfer coding other than plain chunked: the libraries decode it as chunked and would pass gzip bytes on.
        expect(await reasonOf(transport.post(requestTo(`${base}/gzip-chunked`, { streamed: true })))).to.equal('invalid_response');
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 100);
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/slow`, { controller }), 1000))).to.equal('aborted');
      });

      it('times only the upstream: a reader that pauses longer than the timeout still gets the whole body', async () => {
        const response = await transport.post(requestTo(`${base}/big`, { streamed: true, timeoutMs: 300 }));
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect((await bodyOf(response)).length).to.equal(BIG);
      });

      it('ends a streamed body that falls silent for longer than the timeout', async () => {
        const response = await transport.post(requestTo(`${base}/stall`, { streamed: true, timeoutMs: 300 }));
        const outcome = await bodyOf(response).then(
          () => 'complete',
          () => 'cut',
        );
        expect(outcome).to.equal('cut');
      });

      it('never sends a POST twice: a kept connection closed after the request was read is a connection failure', async () => {
        const group = `cut-${name}`;
        expect((await transport.fetchWhole(requestTo(`${base}/cut-post`, { group }), 1000)).status).to.equal(200);
        // undici frees a connection for the next call only after the turn that completed the answer.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const before = seen.get('/cut-post') ?? 0;
        expect(await reasonOf(transport.fetchWhole(requestTo(`${base}/cut-post`, { group }), 1000))).to.equal('connection');
        expect((seen.get('/cut-post') ?? 0) - before, 'requests the upstream received').to.equal(1);
      });

      it('says which failures were never sent (upstream.targets may send those elsewhere, whatever the method)', async () => {
        const failureOf = (pending: Promise<unknown>) =>
          pending.then(
            () => undefined,
            (thrown: unknown) => thrown,
          );
        for (const streamed of [false, true]) {
          const send = (request: UpstreamRequest) => (streamed ? transport.post(request) : transport.fetchWhole(request, 1000));
          // Refused: nothing reached an upstream.
          expect(notSent(await failureOf(send(requestTo(refused, { streamed })))), 'refused').to.equal(true);
          // Received and never answered, or cut once read: it may have run.
          expect(notSent(await failureOf(send(requestTo(`${base}/slow`, { streamed, timeoutMs: 300 })))), 'unanswered').to.equal(false);
          const group = `unsent-${name}-${streamed}`;
          expect((await transport.fetchWhole(requestTo(`${base}/cut-post`, { group }), 1000)).status).to.equal(200);
          await new Promise((resolve) => setTimeout(resolve, 100));
          expect(notSent(await failureOf(transport.fetchWhole(requestTo(`${base}/cut-post`, { group }), 1000))), 'cut after reading').to.equal(false);
        }
      });

      /** The connection an answer came on, in both modes. */
      const connectionOf = async (path: string, group: string, streamed = false, caller = 1): Promise<number> => {
        const request = requestTo(`${base}${path}`, { group, streamed, caller });
        const text = streamed ? await bodyOf(await transport.post(request)) : (await transport.fetchWhole(request, 1000)).body.toString();
        // undici frees a connection for the next call only after the turn that completed the answer.
        await new Promise((resolve) => setTimeout(resolve, 50));
        return (JSON.parse(text) as { connection: number }).connection;
      };

      it('shares kept connections only within one group and one caller', async () => {
        for (const streamed of [false, true]) {
          const group = `callers-${name}-${streamed}`;
          const first = await connectionOf('/connection', group, streamed, 1);
          expect(await connectionOf('/connection', group, streamed, 1), 'the same caller and group, next call').to.equal(first);
          const other = await connectionOf('/connection', group, streamed, 2);
          expect(other, "another caller's call").to.not.equal(first);
          const credentials = await connectionOf('/connection', `${group}-other-credentials`, streamed, 1);
          expect([first, other], 'a call of the first caller with other credentials').to.not.include(credentials);
          expect(await connectionOf('/connection', group, streamed, 1), 'the first caller again').to.equal(first);
          expect(await connectionOf('/connection', group, streamed, 2), 'the other caller again').to.equal(other);
        }
      });

      it('refuses an answer that echoes the X-Request-Id of another request (request_id_mismatch), and closes its connection', async () => {
        for (const streamed of [false, true]) {
          const group = `ids-${name}-${streamed}`;
          const own = requestTo(`${base}/echo-id`, { group, streamed, requestId: 'r-1' });
          const answer = streamed ? await bodyOf(await transport.post(own)) : (await transport.fetchWhole(own, 1000)).body.toString();
          const kept = (JSON.parse(answer) as { connection: number }).connection;
          await new Promise((resolve) => setTimeout(resolve, 50));
          const another = requestTo(`${base}/other-id`, { group, streamed, requestId: 'r-2' });
          expect(await reasonOf(streamed ? transport.post(another) : transport.fetchWhole(another, 1000))).to.equal('request_id_mismatch');
          await eventually(`the connection of the refused answer closed (${streamed ? 'streamed' : 'whole'})`, () => closed.has(kept) || undefined);
        }
      });

      it('never reuses a connection on which the upstream sent bytes past an answer, in the same read or while it was idle', async () => {
        for (const streamed of [false, true]) {
          const group = `stray-${name}-${streamed}`;
          const same = await connectionOf('/stray-same', group, streamed).catch(() => undefined);
          expect(await connectionOf('/connection', group, streamed), 'after stray bytes in the same read').to.not.equal(same);
          const later = await connectionOf('/stray-later', group, streamed);
          await eventually(`the connection that sent stray bytes while idle closed (${streamed ? 'streamed' : 'whole'})`, () => closed.has(later) || undefined);
          expect(await connectionOf('/connection', group, streamed), 'after stray bytes while idle').to.not.equal(later);
        }
      });
    });
  }
});
