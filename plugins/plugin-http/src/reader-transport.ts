import { ConnectionPool } from './connection-pool.js';
import { libraryFailure } from './library-errors.js';
import { passthroughRequest } from './passthrough-reader.js';
import { readWhole, type UpstreamResponse, type UpstreamRequest, type UpstreamTransport } from './upstream-transport.js';

/**
 * The gateway's own HTTP/1.1 reader (passthrough-reader.ts) as a transport, for http:// and https://
 * upstreams: its keep-alive pool and shared read buffers, bodies written to the client straight from them.
 * It serves passthrough downloads by default; its whole answers (fetchWhole) exist so that it passes the
 * same conformance suite as undici.
 */
export function readerTransport(): UpstreamTransport {
  const pool = new ConnectionPool();
  const post = (request: UpstreamRequest): Promise<UpstreamResponse> => passthroughRequest(request, pool);
  return {
    post,
    fetchWhole: async (request, maxBytes) => readWhole(await post(request), maxBytes, libraryFailure),
    close: () => pool.close(),
  };
}
