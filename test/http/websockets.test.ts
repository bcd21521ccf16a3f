import http, { type IncomingHttpHeaders } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { expect } from 'chai';
import { WebSocket, WebSocketServer } from 'ws';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { apiKeyClient, call } from '../support/http.js';
import { rssMb } from '../support/process-memory.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

/**
 * `websocket: true`: real `ws` clients through the gateway to a real `ws` upstream on loopback. The upgrade goes
 * through authentication and steps 1-8 like any request; frames, pings and close codes are relayed both ways.
 */
interface Handshake {
  url: string;
  headers: IncomingHttpHeaders;
}

/** What the upstream sends on 'flood': far more than the gateway may hold for a client that does not read. */
const FLOOD_BYTES = 96 * 1024 * 1024;
const FLOOD_MESSAGE = Buffer.alloc(256 * 1024, 7);

async function startEchoService() {
  const handshakes: Handshake[] = [];
  /** The upstream's side of the sockets it was asked to flood: what it could not yet hand over is its bufferedAmount. */
  const flooding: WebSocket[] = [];
  const pings: string[] = [];
  const closes: Array<[number, string]> = [];
  const server = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    maxPayload: 8 * 1024 * 1024,
    handleProtocols: (offered) => (offered.has('chat') ? 'chat' : false),
  });
  server.on('connection', (socket, req) => {
    handshakes.push({ url: req.url!, headers: req.headers });
    socket.on('ping', (data) => pings.push(data.toString()));
    socket.on('close', (code, reason) => closes.push([code, reason.toString()]));
    socket.on('message', (data, isBinary) => {
      if (!isBinary && data.toString() === 'close-4000') return socket.close(4000, 'bye');
      if (!isBinary && data.toString() === 'flood') {
        flooding.push(socket);
        for (let sent = 0; sent < FLOOD_BYTES; sent += FLOOD_MESSAGE.length) socket.send(FLOOD_MESSAGE, { binary: true });
        return;
      }
      socket.send(data, { binary: isBinary });
    });
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    handshakes,
    flooding,
    pings,
    closes,
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.clients.forEach((client) => client.terminate()), server.close(() => resolve()))),
  };
}

const echo = await startEchoService();
/** An upstream that speaks first (as VNC and some chat servers do): its greeting goes out as the socket opens. */
const greeter = new WebSocketServer({ port: 0, host: '127.0.0.1' });
greeter.on('connection', (socket) => socket.send('hello from upstream'));
await new Promise<void>((resolve) => greeter.once('listening', () => resolve()));
/** An upstream that answers 'big' with a message over the endpoint's max_message_bytes. */
const bigSender = new WebSocketServer({ port: 0, host: '127.0.0.1', maxPayload: 8 * 1024 * 1024 });
bigSender.on('connection', (socket) => socket.on('message', () => socket.send(Buffer.alloc(2 * 1024 * 1024, 1))));
await new Promise<void>((resolve) => bigSender.once('listening', () => resolve()));
/** An endless download: a chunk every 100 ms until the connection ends. */
const feed = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  const timer = setInterval(() => res.write('tick\n'), 100);
  res.on('close', () => clearInterval(timer));
});
await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve));
/** An upstream that takes the connection and never answers the handshake. */
const silentSockets: net.Socket[] = [];
const silent = net.createServer((socket) => silentSockets.push(socket));
await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
after(async () => {
  await echo.close();
  for (const server of [greeter, bigSender]) {
    server.clients.forEach((client) => client.terminate());
    server.close();
  }
  feed.closeAllConnections();
  feed.close();
  silentSockets.forEach((socket) => socket.destroy());
  silent.close();
});

const socketEndpoint = (path: string, extra: Record<string, unknown> = {}) => ({
  path,
  method: 'GET',
  type: 'http',
  websocket: true,
  upstream: { url: `${echo.url}/live` },
  ...extra,
});
const dashboard = {
  name: 'dash',
  type: 'app',
  endpoints: [
    socketEndpoint('live', { client_filter: { allowed_fields: ['room'], field_rules: { room: { type: 'string', pattern: '^[a-z]+$' } } } }),
    socketEndpoint('admin', { permissions: { min_power: 50 } }),
    socketEndpoint('quiet', { idle_timeout: '1s' }),
    socketEndpoint('greeting', { upstream: { url: `ws://127.0.0.1:${(greeter.address() as AddressInfo).port}/` } }),
    socketEndpoint('big', { upstream: { url: `ws://127.0.0.1:${(bigSender.address() as AddressInfo).port}/` } }),
    socketEndpoint('silent', { upstream: { url: `ws://127.0.0.1:${(silent.address() as AddressInfo).port}/live`, timeout: '1s' } }),
    {
      path: 'feed',
      method: 'GET',
      type: 'http',
      upstream: { url: `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed`, forward: 'request', timeout: '5s' },
    },
    // The same feed as a passthrough download (the context POSTed, the answer streamed by the gateway's own reader).
    {
      path: 'feed-passthrough',
      method: 'GET',
      type: 'http',
      upstream: { url: `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed`, passthrough: true, timeout: '5s' },
    },
  ],
};

interface Opened {
  socket: WebSocket;
  messages: Array<{ data: Buffer; isBinary: boolean }>;
  closed: Promise<[number, string]>;
}

/** A streamed download under way (its first bytes read): resolves to how it ended, cut by the gateway or ended. */
async function heldDownload(url: string, credential: string): Promise<{ end: Promise<'cut' | 'ended'> }> {
  const download = await fetch(url, { headers: { authorization: `Bearer ${credential}` } });
  expect(download.status).to.equal(200);
  const reader = download.body!.getReader();
  await reader.read();
  // In an object: an async function would wait for a promise it returned.
  const end = (async () => {
    try {
      for (;;) if ((await reader.read()).done) return 'ended' as const;
    } catch {
      return 'cut' as const;
    }
  })();
  return { end };
}

for (const dialect of dialects) {
  describe(`http endpoints: WebSockets (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(
      dialect,
      [{ username: 'ana', power: 10 }],
      { websocket: { max_per_user: 3 } },
      // A process: the slow reader's case measures the gateway's own memory.
      { toolkitsDir: toolkitDir({ 'dash.yaml': dashboard }), process: true },
    );
    let token: string;
    before(async () => {
      token = await s.login('ana');
    });
    const wsUrl = (path: string) => `${s.gateway.base.replace(/^http/, 'ws')}/tk/app/dash/${path}`;

    /** Opens a socket through the gateway; rejects with the HTTP status of a refused upgrade. */
    const open = (path: string, options: { protocols?: string[]; headers?: Record<string, string> } = {}): Promise<Opened> =>
      new Promise((resolve, reject) => {
        const socket = new WebSocket(wsUrl(path), options.protocols ?? [], { headers: options.headers ?? { authorization: `Bearer ${token}` } });
        const messages: Opened['messages'] = [];
        socket.on('message', (data: Buffer, isBinary) => messages.push({ data, isBinary }));
        const closed = new Promise<[number, string]>((done) => socket.once('close', (code, reason) => done([code, reason.toString()])));
        socket.once('open', () => resolve({ socket, messages, closed }));
        socket.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => reject(Object.assign(new Error(`refused: ${res.statusCode}`), { status: res.statusCode, body })));
        });
        socket.once('error', reject);
      });
    const refusal = async (promise: Promise<Opened>) => {
      try {
        await promise;
      } catch (err) {
        const { status, body } = err as { status?: number; body?: string };
        const error = body ? JSON.parse(body).error : undefined;
        return { status, code: error?.code, ...(error?.details?.timeout_ms !== undefined ? { timeout_ms: error.details.timeout_ms } : {}) };
      }
      throw new Error('the upgrade was accepted');
    };

    it('relays text and binary both ways; the upstream hears Tkgate-Context (with the filtered query), X-Request-Id and traceparent, never the token', async () => {
      const { socket, messages } = await open('live?room=ops&junk=1');
      socket.send('hello');
      socket.send(Buffer.from([0, 1, 2, 255]));
      await eventually('both echoes', () => messages.length === 2);
      expect(messages[0]).to.deep.equal({ data: Buffer.from('hello'), isBinary: false });
      expect(messages[1]).to.deep.equal({ data: Buffer.from([0, 1, 2, 255]), isBinary: true });
      const { headers } = echo.handshakes.at(-1)!;
      const context = JSON.parse(Buffer.from(String(headers['tkgate-context']), 'base64url').toString('utf8'));
      expect(context).to.include({ username: 'ana', user_id: s.ids.ana });
      expect(context.payload).to.deep.equal({ room: 'ops' });
      expect(headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
      expect(headers.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      expect(headers.authorization).to.equal(undefined);
      socket.close(1000);
    });

    it('relays a fragmented message whole, pings and pongs, and close codes with their reasons both ways', async () => {
      const { socket, messages, closed } = await open('live');
      socket.send('frag', { fin: false });
      socket.send('mented', { fin: true });
      await eventually('the echo', () => messages.length === 1);
      expect(messages.map((m) => m.data.toString())).to.deep.equal(['fragmented']);
      const pong = new Promise<string>((resolve) => socket.once('pong', (data) => resolve(data.toString())));
      socket.ping('are-you-there');
      expect(await pong).to.equal('are-you-there');
      expect(echo.pings).to.include('are-you-there');
      socket.send('close-4000');
      expect(await closed).to.deep.equal([4000, 'bye']);
      const second = await open('live');
      second.socket.close(4321, 'done here');
      await eventually('the close at the upstream', () => echo.closes.some(([code, reason]) => code === 4321 && reason === 'done here'));
    });

    it('closes a message over max_message_bytes (default 1 MiB) with 1009', async () => {
      const { socket, closed } = await open('live');
      socket.send(Buffer.alloc(2 * 1024 * 1024, 1));
      const [code] = await closed;
      expect(code).to.equal(1009);
    });

    it("relays an upstream's greeting sent as the socket opens, to every one of 30 sockets", async () => {
      const greeted: string[] = [];
      for (let i = 0; i < 30; i++) {
        // A place of max_per_user frees once the gateway has seen the last socket close.
        const { socket, messages, closed } = await eventually('a place', () => open('greeting').catch(() => undefined));
        try {
          await eventually(`the greeting on socket ${i + 1}`, () => messages.length > 0, 5000);
          greeted.push(messages[0]!.data.toString());
        } finally {
          socket.close(1000);
          await closed;
        }
      }
      expect(greeted).to.deep.equal(Array(30).fill('hello from upstream'));
    });

    it("closes the client's side with 1009 when the upstream sends a message over max_message_bytes", async () => {
      const { socket, closed } = await open('big');
      socket.send('big');
      const [code] = await closed;
      expect(code).to.equal(1009);
    });

    it('takes a token-only tkgate.bearer.<token> offer as a browser makes it: the 101 names the offered protocol, the upstream never hears it', async () => {
      // A client that checks the answer as browsers do (ws, like Chromium, fails a 101 that names none of its offers).
      const { socket } = await open('live', { protocols: [`tkgate.bearer.${token}`], headers: {} });
      expect(socket.protocol).to.equal(`tkgate.bearer.${token}`);
      const { headers } = echo.handshakes.at(-1)!;
      expect(headers['sec-websocket-protocol']).to.equal(undefined);
      expect(JSON.stringify(headers)).to.not.include(token);
      socket.close();
    });

    it('takes a browser token as the subprotocol tkgate.bearer.<token>, never forwarding nor echoing it', async () => {
      const { socket } = await open('live', { protocols: [`tkgate.bearer.${token}`, 'chat'], headers: {} });
      expect(socket.protocol).to.equal('chat');
      const { headers } = echo.handshakes.at(-1)!;
      expect(headers['sec-websocket-protocol']).to.equal('chat');
      expect(JSON.stringify(headers)).to.not.include(token);
      socket.close();
    });

    it("holds back an upstream that floods a client that stopped reading: the gateway's memory stays bounded, and every byte arrives once it reads again", async () => {
      const pid = s.gateway.child.pid!;
      const { socket } = await open('live');
      try {
        let received = 0;
        socket.on('message', (data: Buffer) => (received += data.length));
        const before = await rssMb(pid);
        socket.pause();
        const flooded = echo.flooding.length;
        socket.send('flood');
        const upstream = await eventually('the flood under way', () => echo.flooding[flooded]);
        // Until what the upstream still holds stops shrinking: the gateway (and the kernel's buffers) took what they will.
        let last = -1;
        await eventually(
          'the upstream held back',
          async () => {
            const now = upstream.bufferedAmount;
            const still = now === last;
            last = now;
            if (!still) await new Promise((resolve) => setTimeout(resolve, 1000));
            return still;
          },
          60_000,
        );
        const growth = (await rssMb(pid)) - before;
        expect(upstream.bufferedAmount, 'what the upstream could not hand over').to.be.greaterThan(FLOOD_BYTES / 4);
        expect(growth, 'RSS growth of the gateway in MB').to.be.lessThan(48);
        socket.resume();
        await eventually('every byte at the client', () => received === FLOOD_BYTES, 60_000);
        socket.close(1000);
      } finally {
        // A failed check leaves no paused socket holding a place of max_per_user.
        if (socket.readyState === WebSocket.OPEN) socket.terminate();
      }
    });

    it('refuses an upgrade with an ordinary HTTP answer: 401, 403, 404, 400, 504 for an upstream that does not answer the handshake', async () => {
      expect(await refusal(open('live', { headers: {} }))).to.deep.equal({ status: 401, code: 'unauthorized' });
      expect(await refusal(open('admin'))).to.deep.equal({ status: 403, code: 'forbidden' });
      expect(await refusal(open('nothing-here'))).to.deep.equal({ status: 404, code: 'endpoint_not_found' });
      expect(await refusal(open('live?room=NOT%20OK'))).to.deep.equal({ status: 400, code: 'invalid_payload' });
      expect(await refusal(open('silent'))).to.deep.equal({ status: 504, code: 'upstream_timeout', timeout_ms: 1000 });
      const plain = await fetch(`${s.gateway.base}/tk/app/dash/live`, { headers: { authorization: `Bearer ${token}` } });
      expect(plain.status).to.equal(426);
    });

    it('allows websocket.max_per_user sockets per user on one instance: one more is 429 too_many_sockets; a closed one frees its place', async () => {
      const held = await Promise.all([open('live'), open('live'), open('live')]);
      expect(await refusal(open('live'))).to.deep.equal({ status: 429, code: 'too_many_sockets' });
      held[0]!.socket.close();
      await held[0]!.closed;
      const again = await eventually('a place again', () => open('live').catch(() => undefined));
      // Every place freed again for the cases after this one.
      for (const { socket, closed } of [again, ...held.slice(1)]) {
        socket.close();
        await closed;
      }
    });

    it('closes a socket idle for idle_timeout with 1001, and writes one access line at close with duration and bytes each way', async () => {
      const { socket, closed } = await open('quiet');
      socket.send('one');
      expect(await closed).to.deep.equal([1001, 'idle']);
      const line = await eventually('the access line', () => s.gateway.logs.find((entry) => entry.msg === 'request' && entry.route === 'tk/app/dash/quiet'));
      // The fields of any request's line, kept from the handshake (not its Koa context) to the socket's close.
      expect(line).to.include({ status: 101, method: 'GET', path: '/api/tk/app/dash/quiet', client: '127.0.0.1', user_id: s.ids.ana });
      expect(line.request_id).to.match(/^[0-9a-f-]{36}$/);
      expect(line.trace_id).to.match(/^[0-9a-f]{32}$/);
      expect(line.bytes).to.be.greaterThan(0);
      expect(line.bytes_received).to.be.greaterThan(0);
      expect(line.duration_ms).to.be.greaterThan(500);
      expect(s.gateway.logs.filter((entry) => entry.msg === 'request' && entry.request_id === line.request_id)).to.have.length(1);
    });
  });
}

for (const dialect of dialects) {
  describe(`a credential's end ends its streams, on every instance (${dialect.name})`, function () {
    this.timeout(60_000);
    const toolkits = toolkitDir({ 'dash.yaml': dashboard });
    const s = withGateway(dialect, [{ username: 'bo' }], {}, { toolkitsDir: toolkits });
    let other: GatewayProcess;
    before(async () => {
      other = await startGateway({ config: { db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: false }, plugins: pluginsWithTestFunctions } });
    });
    after(() => other?.stop());

    it('a logout on one instance closes a WebSocket (4401 session_ended) and cuts a download held on the other', async () => {
      const token = await s.login('bo');
      const socket = new WebSocket(`${other.base.replace(/^http/, 'ws')}/tk/app/dash/live`, { headers: { authorization: `Bearer ${token}` } });
      const closed = new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, reason.toString()])));
      await new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)));
      const download = await heldDownload(`${other.base}/tk/app/dash/feed`, token);
      expect((await call('POST', `${s.gateway.base}/auth/logout`, { token })).status).to.equal(200);
      expect(await closed).to.deep.equal([4401, 'session_ended']);
      expect(await download.end).to.be.oneOf(['cut', 'ended']);
      // The upstream side of the socket was closed too.
      await eventually('the upstream socket closed', () => echo.closes.some(([code]) => code === 4401));
    });

    it('revoking an API key on one instance cuts the downloads it holds on the other, forwarded and passthrough', async () => {
      const session = await s.login('bo');
      const created = await apiKeyClient(s.gateway.base).create(session, { name: 'feed reader' });
      expect(created.status).to.equal(201);
      const { key, id } = created.body.data as { key: string; id: string };
      const download = await heldDownload(`${other.base}/tk/app/dash/feed`, key);
      const passthrough = await heldDownload(`${other.base}/tk/app/dash/feed-passthrough`, key);
      expect((await apiKeyClient(s.gateway.base).revoke(session, id)).status).to.equal(200);
      expect(await download.end).to.be.oneOf(['cut', 'ended']);
      expect(await passthrough.end, 'the passthrough download').to.be.oneOf(['cut', 'ended']);
    });
  });
}
