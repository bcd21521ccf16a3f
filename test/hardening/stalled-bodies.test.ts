import net from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * Sends the head and part of a body on a new connection, then nothing: resolves with every byte the gateway
 * sent once it closed the connection. Rejects when it is still open after `deadlineMs`.
 */
function stalledRequest(port: number, bytes: string, deadlineMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection is still open after ${deadlineMs} ms; received ${JSON.stringify(received.slice(0, 300))}`));
    }, deadlineMs);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined); // a reset after the answer is a close too
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.write(bytes);
  });
}

/** The answer in `text`: its status and its JSON body. */
function answerIn(text: string): { status: number; head: string; body: Record<string, any> } {
  const split = text.indexOf('\r\n\r\n');
  expect(split, `a response head in ${JSON.stringify(text.slice(0, 200))}`).to.be.greaterThan(0);
  const head = text.slice(0, split);
  return { status: Number(head.split(' ')[1]), head, body: JSON.parse(text.slice(split + 4)) };
}

/** The answer to a stalled body: 408 request_timeout naming server.body_timeout, and the connection closed. */
function expectTimedOut(text: string, path: string, bodyTimeoutS = 1) {
  const answer = answerIn(text);
  expect(answer.status).to.equal(408);
  expect(answer.head.toLowerCase()).to.include('connection: close');
  expect(answer.body).to.deep.include({ success: false, endpoint: path });
  expect(answer.body.error).to.deep.include({ code: 'request_timeout', details: { body_timeout_s: bodyTimeoutS } });
}

const stalledLogin = [
  'POST /api/auth/login HTTP/1.1',
  'Host: 127.0.0.1',
  'Content-Type: application/json',
  'Content-Length: 100',
  '',
  '{"username":"sam",',
].join('\r\n');

/** server.body_timeout (docs/configuration.md): a stalled body is answered 408 and its connection closed, on /auth/login too. */
describe(`stalled request bodies (${dialects[0]!.name})`, function () {
  this.timeout(60_000);
  const s = withGateway(
    dialects[0]!,
    [{ username: 'sam' }],
    {},
    {
      toolkitsDir: toolkitDir({ 'slow.yaml': { name: 'slow', type: 'app', endpoints: [{ path: 'echo', method: 'POST', type: 'internal', handler: 'echo' }] } }),
      // server.body_timeout through its variable: a gateway without the key (older versions) starts all the
      // same and holds a stalled body for Node's 300 s, past stalledRequest's deadline.
      env: { TKGATE_BODY_TIMEOUT: '1s' },
    },
  );

  it('POST /auth/login with a Content-Length and half its body, then silence: 408 request_timeout, connection closed', async () => {
    expectTimedOut(await stalledRequest(s.gateway.port, stalledLogin), '/api/auth/login');
  });

  it('a chunked body to a toolkit endpoint that stops after its first chunk: the same', async () => {
    const token = await s.login('sam');
    const text = await stalledRequest(
      s.gateway.port,
      [
        'POST /api/tk/app/slow/echo HTTP/1.1',
        'Host: 127.0.0.1',
        `Authorization: Bearer ${token}`,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        '',
        '5',
        '{"a":',
        '',
      ].join('\r\n'),
    );
    expectTimedOut(text, '/api/tk/app/slow/echo');
  });

  it('a whole body is read as before', async () => {
    expect((await s.auth.login('sam', 'not-the-password')).status).to.equal(401);
    expect((await s.auth.login('sam', passwordOf('sam'))).status).to.equal(200);
  });
});

/** The default server.body_timeout (30s), without the variable: the setting as shipped, in any version. */
describe(`a stalled request body with the default server.body_timeout (${dialects[0]!.name})`, function () {
  this.timeout(150_000);
  const s = withGateway(dialects[0]!, [{ username: 'sam' }], {}, { process: true });

  it("POST /auth/login with half its body: 408 request_timeout, well before Node's own 300 s", async () => {
    expectTimedOut(await stalledRequest(s.gateway.port, stalledLogin, 120_000), '/api/auth/login', 30);
  });
});
