/**
 * A request's trace as the core holds it: the public TraceContext (tracing/trace-api.ts) plus what the
 * core does with the request's own span. Without recording (tracing.enabled false) it is the trace
 * context alone: the caller's traceparent read, new span ids for callees, nothing else, no span objects.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ChildSpan, SpanAttributes, SpanOptions, TraceContext } from './trace-api.js';
import { formatTraceparent, newSpanId, parseTraceparent, traceIdOfRequest, type RemoteParent } from './trace-context.js';

/** Where a gateway's request traces begin (tracing.ts makes one: the trace context alone, or with spans). */
export interface Tracing {
  /** The trace of a request that has just arrived, continuing the caller's traceparent when it is valid. */
  begin(headers: IncomingHttpHeaders, requestId: string, method: string): RequestTrace;
  /** At stop: the spans still queued are sent (within a bound), then the exporter closes. */
  close(): Promise<void>;
}

export interface RequestTrace extends TraceContext {
  /** Whether spans are recorded: the core's own child spans (database reads, password hashing) are made only then. */
  readonly recording: boolean;
  /** Attributes of the request's server span (the toolkit and endpoint once known). */
  describe(attributes: SpanAttributes): void;
  /** The response is over: the server span takes its route template, status and user, and ends. */
  finish(route: string, status: number, userId: number | undefined): void;
}

/** The caller's parent from the request's headers, or undefined (absent or invalid: a new trace begins). */
export function remoteParentOf(headers: IncomingHttpHeaders): RemoteParent | undefined {
  const traceparent = headers.traceparent;
  // Node joins repeated lines of a header it does not know with ", ": two traceparents never read as one.
  return typeof traceparent === 'string' ? parseTraceparent(traceparent, headers.tracestate) : undefined;
}

/**
 * A child operation when nothing is recorded: its own span id for the callee, the caller's sampled flag and
 * tracestate. The span id is drawn when a callee is told (the traceparent read): an internal endpoint's span
 * has no callee, and with tracing off it cost the span id and the request's trace id for nothing.
 */
class UnrecordedSpan implements ChildSpan {
  private madeTraceparent?: string;

  constructor(
    private readonly request: UnrecordedRequest,
    private readonly parent: RemoteParent | undefined,
  ) {}

  get traceparent(): string {
    return (this.madeTraceparent ??= formatTraceparent(this.request.traceId, newSpanId(), this.parent !== undefined && (this.parent.flags & 1) === 1));
  }

  get tracestate(): string | undefined {
    return this.parent?.tracestate;
  }

  setAttribute(): void {}
  end(): void {}
}

/** The trace of a request while tracing is off: a class, so that a request that never asks costs one small object. */
export class UnrecordedRequest implements RequestTrace {
  readonly recording = false;
  private readonly parent: RemoteParent | undefined;
  private madeTraceId?: string;

  constructor(
    headers: IncomingHttpHeaders,
    private readonly requestId: string,
  ) {
    this.parent = remoteParentOf(headers);
  }

  get traceId(): string {
    return (this.madeTraceId ??= this.parent?.traceId ?? traceIdOfRequest(this.requestId));
  }

  startSpan(_name: string, _options?: SpanOptions): ChildSpan {
    return new UnrecordedSpan(this, this.parent);
  }

  describe(): void {}
  finish(): void {}
}
