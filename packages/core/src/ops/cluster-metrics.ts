/**
 * One scrape for every worker (SPEC section 9). With server.workers > 1 the primary serves the metrics
 * listener from clusterSource(), and each worker answers the primary's requests with its own registry
 * (answerPrimaryScrapes). With one process, that process serves its own registry.
 */
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricsSource } from './metrics-server.js';

/** In a worker: lets the primary's AggregatorRegistry read this worker's registry. */
export function answerPrimaryScrapes(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker-side message listener.
  new AggregatorRegistry();
}

/** In the primary: every live worker's metrics, summed (or as prom-client's aggregator for each metric says). */
export function clusterSource(): MetricsSource {
  const aggregator = new AggregatorRegistry();
  return { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() };
}
