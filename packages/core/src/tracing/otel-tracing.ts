/**
 * Tracing with spans (tracing.enabled): an OpenTelemetry tracer provider of this gateway's own, never the
 * process-wide global. Loaded only when enabled (tracing.ts imports it on demand), so a gateway without
 * spans loads none of the SDK.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ServerConfig } from '../config/server-config.js';
import type { Logger } from '../log.js';
import { RecordedRequest } from './recorded-request.js';
import type { Tracing } from './request-trace.js';
import { WatchedExporter } from './watched-exporter.js';

/** Queued spans beyond this are dropped: memory stays bounded whatever the collector does. */
const MAX_QUEUED_SPANS = 4096;
/** How long one export may take before the batch is given up. */
const EXPORT_TIMEOUT_MS = 5_000;
/** How long a stop waits for the last spans. */
const CLOSE_TIMEOUT_MS = 2_000;

/** The OpenTelemetry pipeline of one gateway: its own provider, sampler, batch processor and exporter. */
export function recordedTracing(config: ServerConfig['tracing'], log: Logger, version: string | undefined): Tracing {
  const exporter = new OTLPTraceExporter({ url: config.endpoint, timeoutMillis: EXPORT_TIMEOUT_MS });
  const processor = new BatchSpanProcessor(new WatchedExporter(exporter, new URL(config.endpoint).origin, log), {
    maxQueueSize: MAX_QUEUED_SPANS,
    maxExportBatchSize: 512,
    scheduledDelayMillis: 1_000,
    exportTimeoutMillis: EXPORT_TIMEOUT_MS,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.service_name, ...(version ? { [ATTR_SERVICE_VERSION]: version } : {}) }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('tkgate', version);
  log.info('tracing on', { collector: new URL(config.endpoint).origin, sample_ratio: config.sample_ratio, service_name: config.service_name });
  return {
    begin: (headers, _requestId, method) => new RecordedRequest(tracer, headers, method),
    close: async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([provider.shutdown().catch(() => undefined), late]);
      clearTimeout(timer);
    },
  };
}
