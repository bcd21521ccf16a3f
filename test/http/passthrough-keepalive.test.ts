import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { onRequests } from './raw-requests.js';

/**
 * Keep-alive connections of http:// passthrough downloads, against an upstream that parses requests on each
 * connection in turn and records which connection served which request: a connection is reused only after
 * an answer framed by length or chunks, read to its exact end, that did not say it closes.
 */
const file = randomBytes(300_000);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const lengthHead = (length: number, extra = '') => `HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n${extra}Content-Length: ${length}\r\n\r\n`;
const chunkedBody = () => {
  const parts: Buffer[] = [Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n')];
  for (let offset = 0; offset < file.length; offset += 70_001) {
    const chunk = file.subarray(offset, offset + 70_001);
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
};

interface KeepAliveUpstream {
  url: string;
  /** Per connection the upstream accepted, the paths it was asked for, in order. */
  connections: string[][];
  /** Connections the upstream has seen closed. */
  closed: number;
  close(): void;
}

async function startKeepAliveUpstream(): Promise<KeepAliveUpstream> {
  const state: KeepAliveUpstream = { url: '', connections: [], closed: 0, close: () => undefined };
  const server = net.createServer((socket) => {
    const paths: string[] = [];
    state.connections.push(paths);
    /** Set by /reset-next: the connection's next request is cut unanswered, as by an upstream closing it just then. */
    let resetNext = false;
    socket.on('error', () => undefined);
    socket.on('close', () => state.closed++);
    onRequests(socket, (path) => {
      paths.push(path);
      if (resetNext) return void socket.destroy();
      answer(socket, path);
      if (path === '/reset-next') resetNext = true;
    });
  });
  const answer = (socket: net.Socket, path: string) => {
    switch (path) {
      case '/length':
      case '/reset-next':
        return void socket.write(Buffer.concat([Buffer.from(lengthHead(file.length)), file]));
      case '/chunked':
        return void socket.write(chunkedBody());
      case '/close':
        return void socket.end(Buffer.concat([Buffer.from(lengthHead(file.length, 'Connection: close\r\n')), file]));
      case '/http10':
        return void socket.write(Buffer.concat([Buffer.from(lengthHead(file.length).replace('HTTP/1.1', 'HTTP/1.0')), file]));
      case '/extra':
        // Five bytes announced, more sent: the rest is never forwarded, and the connection never reused.
        return void socket.write(`${lengthHead(5)}helloHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n`);
      case '/ends-after':
        // Closes after answering without having said so: the kept connection goes away while idle.
        return void socket.end(Buffer.concat([Buffer.from(lengthHead(file.length)), file]));
      default:
        return void socket.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    }
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => {
    server.close();
    for (const socket of sockets) socket.destroy();
  };
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return state;
}

const upstream = await startKeepAliveUpstream();
after(() => upstream.close());

const routes = ['length', 'chunked', 'close', 'http10', 'extra', 'reset-next', 'ends-after'];
const toolkit = {
  name: 'keepalive',
  type: 'app',
  endpoints: routes.map((name) => ({
    path: name,
    method: 'GET',
    type: 'http',
    upstream: { url: `${upstream.url}/${name}`, timeout: '5s', passthrough: true },
  })),
};

for (const dialect of dialects) {
  describe(`http passthrough keep-alive connections (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'xavi', power: 7 }], {}, { toolkitsDir: toolkitDir({ 'keepalive.yaml': toolkit }) });
    /** Downloads through the gateway; returns the status and the body. */
    const download = async (name: string) => {
      const response = await fetch(`${s.gateway.base}/tk/app/keepalive/${name}`, { headers: { authorization: `Bearer ${await s.login('xavi')}` } });
      return { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
    };
    /** Runs the downloads one after another; returns the upstream connections they opened, as lists of paths. */
    const sequence = async (names: string[]) => {
      const before = upstream.connections.length;
      for (const name of names) {
        const { status, body } = await download(name);
        expect(status, name).to.equal(200);
        if (name === 'extra') expect(Buffer.from(body).toString(), name).to.equal('hello');
        else expect(sha256(body), name).to.equal(sha256(file));
      }
      return upstream.connections.slice(before);
    };

    /** The connections whose last requests were `paths`, in this order. */
    const endingWith = (...paths: string[]) => upstream.connections.filter((served) => served.slice(-paths.length).join(' ') === paths.join(' '));

    it('carries sequential downloads framed by length or chunks over one upstream connection', async () => {
      const carriedBefore = endingWith('/length', '/chunked', '/length', '/chunked').length;
      const opened = await sequence(['length', 'chunked', 'length', 'chunked']);
      expect(opened.length, 'connections opened').to.be.at.most(1);
      expect(endingWith('/length', '/chunked', '/length', '/chunked').length, 'connections that carried all four').to.equal(carriedBefore + 1);
    });

    it('never reuses a connection after Connection: close, HTTP/1.0 or bytes past the announced length', async () => {
      for (const name of ['close', 'http10', 'extra']) {
        await sequence([name, name, 'length']);
        // A doubtful answer is the last its connection ever carried.
        for (const served of upstream.connections) {
          served.forEach((path, index) => {
            if (path === `/${name}`) expect(index, `${name} on ${served.join(' ')}`).to.equal(served.length - 1);
          });
        }
      }
    });

    it('opens a fresh connection when the upstream closed a kept one while idle; one closed as the next request reached it is a 502, not a second request', async () => {
      // Closed while idle (without saying so): the gateway sees the close and drops the connection.
      const closedBefore = upstream.closed;
      await sequence(['ends-after']);
      await eventually('the upstream closed its connection', () => upstream.closed > closedBefore || undefined);
      await sequence(['length', 'length']);
      // Cut as the next request reached it: the request did reach the upstream, so it is not sent again (a POST
      // must not be repeated on the proxy's own, RFC 9110 9.2.2; test/http/upstream-faults.test.ts has the
      // idempotent case): 502, and the download after it opens a fresh connection.
      await sequence(['reset-next']);
      const cutBefore = endingWith('/reset-next', '/length').length;
      const lengthsBefore = upstream.connections.flat().filter((path) => path === '/length').length;
      const cut = await download('length');
      expect(cut.status, 'the call cut on its kept connection').to.equal(502);
      expect(endingWith('/reset-next', '/length').length, 'connections cut as the next request reached them').to.equal(cutBefore + 1);
      expect(upstream.connections.flat().filter((path) => path === '/length').length, 'times the upstream was asked').to.equal(lengthsBefore + 1);
      await sequence(['length']);
    });
  });
}
