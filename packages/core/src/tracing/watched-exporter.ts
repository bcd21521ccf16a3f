import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log.js';

/** How often an unreachable collector is logged: once a minute, not once per batch. */
const COMPLAIN_EVERY_MS = 60_000;

/**
 * The OTLP exporter, watched: a failed export is logged at most once a minute (with the collector's
 * origin and the reason, never the spans), then counted until the next line. Requests never wait for it:
 * the batch processor calls it from its own timer.
 */
export class WatchedExporter implements SpanExporter {
  private lastComplaint = -Infinity;
  private failedSinceLast = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly collector: string,
    private readonly log: Logger,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== 0) this.failed(spans.length, result.error);
      done(result);
    });
  }

  private failed(spans: number, error: Error | undefined): void {
    this.failedSinceLast += spans;
    const now = performance.now();
    if (now - this.lastComplaint < COMPLAIN_EVERY_MS) return;
    this.lastComplaint = now;
    this.log.warn('trace export failed; spans dropped', { collector: this.collector, spans_dropped: this.failedSinceLast, err: error?.message ?? 'unknown' });
    this.failedSinceLast = 0;
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
