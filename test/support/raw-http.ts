import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface RawReply {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends bytes as they are on a new connection to 127.0.0.1 and reads one response: for requests fetch will
 * not send (a Content-Length it does not match, chunked framing by hand). Rejects when no complete head
 * arrives within `deadlineMs`. The body is what arrived until the connection closed or `deadlineMs` passed.
 */
export function rawRequest(port: number, request: string | Buffer, deadlineMs = 10_000): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no response head within ${deadlineMs} ms: ${JSON.stringify(text.slice(0, 200))}`));
      const head = text.slice(0, split);
      resolve({ status: Number(head.split(' ')[1]), head, body: text.slice(split + 4) });
    };
    const timer = setTimeout(finish, deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (completeResponse(received.toString('latin1'))) finish();
    });
    // A reset after the answer arrived (the server closed with our bytes unread) is not a failure.
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(request);
  });
}

/** A response head plus as many body bytes as its Content-Length says. */
function completeResponse(text: string): boolean {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, split));
  return length !== null && text.length - split - 4 >= Number(length[1]);
}

/**
 * A hostile upstream: answers each request path with exact bytes (whatever framing they claim), then
 * closes the connection. Listens on 127.0.0.1 and on ::1, for IPv6 literal URLs.
 */
export interface RawUpstream {
  /** http://127.0.0.1:port */
  url: string;
  /** http://[::1]:port; undefined on a host without IPv6 loopback. */
  url6: string | undefined;
  close(): void;
}

export async function startRawUpstream(answers: Record<string, string | Buffer>): Promise<RawUpstream> {
  const serve = (socket: net.Socket) => {
    let request = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      request += chunk.toString('latin1');
      const end = request.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(request.slice(0, end))?.[1] ?? 0);
      if (request.length < end + 4 + length) return;
      const path = request.split(' ')[1]!;
      socket.end(answers[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      socket.removeAllListeners('data');
    });
  };
  const v4 = net.createServer(serve);
  await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
  const port = (v4.address() as AddressInfo).port;
  const v6 = net.createServer(serve);
  const hasIpv6 = await new Promise<boolean>((resolve) => {
    v6.once('error', () => resolve(false));
    v6.listen(port, '::1', () => resolve(true));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    url6: hasIpv6 ? `http://[::1]:${port}` : undefined,
    close: () => {
      v4.close();
      if (hasIpv6) v6.close();
    },
  };
}

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Parses as many complete HTTP/1.1 responses as `bytes` holds; `rest` is what follows the last one. */
export function parseResponses(bytes: Buffer): { responses: ParsedResponse[]; rest: Buffer } {
  const responses: ParsedResponse[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine, ...lines] = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    let bodyEnd: number;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      let cursor = end + 4;
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', cursor);
        if (lineEnd < 0) return { responses, rest: bytes.subarray(at) };
        const size = parseInt(bytes.subarray(cursor, lineEnd).toString('latin1'), 16);
        if (bytes.length < lineEnd + 2 + size + 2) return { responses, rest: bytes.subarray(at) };
        parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        cursor = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      bodyEnd = cursor;
      body = Buffer.concat(parts);
    } else {
      // A length that is not a plain number (what a hostile upstream sends) cannot frame anything: stop here.
      const length = headers['content-length'] ?? '0';
      if (!/^\d+$/.test(length)) break;
      bodyEnd = end + 4 + Number(length);
      if (bytes.length < bodyEnd) break;
      body = bytes.subarray(end + 4, bodyEnd);
    }
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body });
    at = bodyEnd;
  }
  return { responses, rest: bytes.subarray(at) };
}

/**
 * Sends `paths` one after the other on one keep-alive connection, each once the previous answer is complete,
 * then closes it: resolves with the answers and every byte that came after the last one (smuggled bytes).
 */
export function keepAliveExchange(base: string, paths: string[], headers: Record<string, string> = {}): Promise<{ responses: ParsedResponse[]; rest: Buffer }> {
  const url = new URL(base);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = Buffer.alloc(0);
    let sent = 0;
    const send = () => socket.write(`GET ${paths[sent++]} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: keep-alive\r\n${extra}\r\n`);
    const timer = setTimeout(() => socket.destroy(new Error(`no complete answers within 20 s: ${received.toString('latin1').slice(0, 500)}`)), 20_000);
    socket.on('connect', send);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const { responses } = parseResponses(received);
      if (responses.length < sent) return;
      if (sent < paths.length) send();
      else socket.end();
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponses(received));
    });
  });
}
