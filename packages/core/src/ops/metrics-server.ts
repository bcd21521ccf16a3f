import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';

/** Where a scrape's text comes from: this process's registry, or (in a cluster's primary) every worker's. */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export const registrySource = (registry: Registry): MetricsSource => ({
  contentType: registry.contentType,
  metrics: () => registry.metrics(),
});

export interface MetricsListener {
  readonly port: number;
  close(): Promise<void>;
}

/** GET /metrics on its own listener (metrics.host:metrics.port), so it is never exposed with the API by accident. */
export async function serveMetrics(source: MetricsSource, host: string, port: number, log: Logger): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    if (req.url?.split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    source.metrics().then(
      (text) => res.writeHead(200, { 'content-type': source.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: Error) => {
        log.error('metrics scrape failed', { err });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? portInUse(host, port) : err);
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const chosen = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  log.info('metrics listening', { host, port: chosen, url: `http://${shownHost}:${chosen}/metrics` });
  return {
    port: chosen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A second gateway on one host meets the first one's metrics listener: the message names the setting to
 * change, since the port alone does not say it is the metrics listener and not server.port.
 */
const portInUse = (host: string, port: number): Error =>
  new Error(
    `metrics.port ${port} on ${host} is already in use (another tkgate on this host?): ` +
      'set metrics.port (env TKGATE_METRICS_PORT) to another port, or to 0 for any free port, or metrics.enabled to false',
  );
