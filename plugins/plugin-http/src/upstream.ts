/**
 * `@tkgate/plugin-http/upstream`: this plugin's upstream clients and its HTTP/1.1 parsers, for the tests
 * that run one suite against each transport and the parsers' unit and differential tests. Not part of the
 * plugin API: no stability promise beyond this repository.
 */
export { chunkDecoder, type ChunkDecoder } from './chunk-decoder.js';
export { parseHead, bareLineFeed, type ResponseHead, type Framing } from './response-head.js';
export { ConnectionPool } from './connection-pool.js';
export { passthroughRequest } from './passthrough-reader.js';
export type { UpstreamRequest, UpstreamResponse, UpstreamTransport, UpstreamAnswer } from './upstream-transport.js';
export { UpstreamFailure, notSent, type FailureReason } from './upstream-failure.js';
export { undiciTransport } from './undici-transport.js';
export { readerTransport } from './reader-transport.js';
export type { UpstreamTls } from './upstream-tls.js';
