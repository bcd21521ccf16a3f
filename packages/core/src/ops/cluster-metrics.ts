/**
 * One scrape for every worker (docs/operating.md, "Metrics"). With server.workers > 1 the primary serves the metrics
 * listener from clusterSource(), and each worker answers the primary's requests with its own registry
 * (answerPrimaryScrapes, which startGateway calls in a worker). With one process, that process
 * serves its own registry.
 */
import type { Registry } from 'prom-client';
import type { MetricsSource } from './metrics-server.js';

/** In a worker: lets the primary's AggregatorRegistry read this worker's registry. */
export async function answerPrimaryScrapes(registry: Registry): Promise<void> {
  const { AggregatorRegistry } = await import('prom-client');
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker-side message listener.
  new AggregatorRegistry();
}

/** In the primary: every live worker's metrics, summed (or as prom-client's aggregator for each metric says). */
export async function clusterSource(): Promise<MetricsSource> {
  const { AggregatorRegistry } = await import('prom-client');
  const aggregator = new AggregatorRegistry();
  return { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() };
}
