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
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
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
