import { ConnectionPool } from './connection-pool.js';
import { libraryFailure } from './library-errors.js';
import { passthroughRequest } from './passthrough-reader.js';
import { UpstreamFailure } from './upstream-failure.js';
import { readWhole, type UpstreamResponse, type UpstreamRequest, type UpstreamTransport } from './upstream-transport.js';

/**
 * The gateway's own HTTP/1.1 reader (passthrough-reader.ts) as a transport, for http:// upstreams only: its
 * keep-alive pool and shared read buffers, bodies written to the client straight from them. It serves
 * http:// passthrough downloads by default; its whole answers (fetchWhole) exist so that it passes the same
 * conformance suite as got and undici.
 */
export function readerTransport(): UpstreamTransport {
  const pool = new ConnectionPool();
  const post = (request: UpstreamRequest): Promise<UpstreamResponse> => {
    if (!request.url.startsWith('http:')) return Promise.reject(new UpstreamFailure('connection', 'the reader speaks http:// only'));
    return passthroughRequest(request, pool);
  };
  return {
    post,
    fetchWhole: async (request, maxBytes) => readWhole(await post(request), maxBytes, libraryFailure),
    close: () => pool.close(),
  };
}

/** http:// through one transport, https:// through another (the plugin's passthrough: the reader, then the library). */
export function byScheme(http: UpstreamTransport, https: UpstreamTransport): UpstreamTransport {
  const of = (request: UpstreamRequest) => (request.url.startsWith('http:') ? http : https);
  return {
    post: (request) => of(request).post(request),
    fetchWhole: (request, maxBytes) => of(request).fetchWhole(request, maxBytes),
    close: () => {
      http.close();
      https.close();
    },
  };
}
