/**
 * The gateway's tracing (docs/operating.md, "Traces"): every request gets a RequestTrace from `begin`. With
 * tracing.enabled an OpenTelemetry tracer provider of this gateway's own (never the process-wide global)
 * records spans and a batch processor exports them over OTLP/HTTP from its own timer, with a bounded
 * queue: a slow or absent collector drops spans, it never holds or fails a request.
 */
import type { ServerConfig } from '../config/server-config.js';
import type { Logger } from '../log.js';
import { UnrecordedRequest, type Tracing } from './request-trace.js';

const untraced: Tracing = {
  begin: (headers, requestId) => new UnrecordedRequest(headers, requestId),
  close: async () => undefined,
};

/** The gateway's tracing: the trace context alone, or with spans (the SDK loaded only then). */
export async function createTracing(config: ServerConfig['tracing'], log: Logger, version: string | undefined): Promise<Tracing> {
  if (!config.enabled) return untraced;
  const { recordedTracing } = await import('./otel-tracing.js');
  return recordedTracing(config, log, version);
}
