import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A real HTTP upstream on loopback, with one route per behaviour the http endpoint type must handle. */
export interface Upstream {
  url: string;
  requests: RecordedRequest[];
  /** The file /file serves, and its SHA-256. */
  file: { bytes: Buffer; sha256: string };
  /** Requests whose connection closed before the upstream finished answering (client aborts reaching it). */
  abandoned: string[];
  close(): Promise<void>;
}

/** With `tls` the upstream speaks HTTPS only (node's https server with those options: certificate, client certificates). */
export async function startUpstream(fileBytes = 8 * 1024 * 1024, tls?: https.ServerOptions): Promise<Upstream> {
  const bytes = randomBytes(fileBytes);
  const upstream = {
    requests: [] as RecordedRequest[],
    file: { bytes, sha256: createHash('sha256').update(bytes).digest('hex') },
    abandoned: [] as string[],
  };
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      upstream.requests.push({ url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.on('close', () => {
        if (!res.writableFinished) upstream.abandoned.push(req.url!);
      });
      route(req.url!, res, bytes);
    });
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    ...upstream,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function route(url: string, res: http.ServerResponse, file: Buffer): void {
  const json = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  const status = /^\/status\/(\d{3})$/.exec(url);
  if (status) return json(Number(status[1]), { error: 'upstream says no', secret: 'upstream-internal-detail' });
  switch (url) {
    case '/json':
      return json(200, { answered: true });
    case '/empty':
      res.writeHead(204);
      return void res.end();
    case '/text':
      res.writeHead(200, { 'content-type': 'text/html' });
      return void res.end('<html>not json</html>');
    case '/large-json':
      return json(200, { blob: 'y'.repeat(8 * 1024 * 1024) });
    case '/big-json':
      return json(200, { blob: 'x'.repeat(5000) });
    case '/slow':
      setTimeout(() => json(200, { late: true }), 3000).unref();
      return;
    case '/reset-mid-body':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"partial": "');
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    case '/file':
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(file.length),
        'content-disposition': 'attachment; filename="dump.bin"',
        'x-upstream-secret': 'not-for-clients',
      });
      return void res.end(file);
    case '/100mb':
    case '/300mb': {
      const chunk = Buffer.alloc(64 * 1024, 7);
      const total = Number(url.slice(1, 4)) * 1024 * 1024;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    case '/chunked': {
      // Chunks of awkward sizes, so chunk boundaries fall anywhere within the gateway's reads.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let offset = 0;
      const sizes = [1, 2, 3, 100, 65_535, 65_536, 65_537, 7, 300_000];
      for (let i = 0; offset < file.length; i++) {
        const size = sizes[i % sizes.length]!;
        res.write(file.subarray(offset, offset + size));
        offset += size;
      }
      return void res.end();
    }
    case '/close-delimited':
      // No length and no chunking: the body ends when the connection does.
      res.useChunkedEncodingByDefault = false;
      res.shouldKeepAlive = false;
      res.writeHead(200, { 'content-type': 'application/octet-stream', connection: 'close' });
      return void res.end(file.subarray(0, 1_000_000));
    case '/reset-mid-download':
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.length) });
      res.write(file.subarray(0, 200_000));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    case '/endless': {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const timer = setInterval(() => res.write(Buffer.alloc(1024)), 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    default:
      return json(404, { error: 'no such route' });
  }
}
