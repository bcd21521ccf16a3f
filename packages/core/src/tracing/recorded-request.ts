/**
 * A request's trace while tracing is on: an OpenTelemetry server span for the request, children for what
 * the core and the plugins do, and the callee's traceparent taken from the child's own span context.
 * Everything goes through one gateway's Tracer: nothing is registered process-wide, so the parent is
 * always passed explicitly as a Context, never read from an ambient one.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { RequestTrace } from './request-trace.js';
import { remoteParentOf } from './request-trace.js';
import type { ChildSpan, SpanAttributes, SpanOptions } from './trace-api.js';
import { formatTraceparent } from './trace-context.js';

/** Methods named as they are; anything else is `_OTHER` (semantic conventions: the set must stay bounded). */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

function failedSpan(span: Span): void {
  // The status says that it failed, not why: an error's message may quote what the caller sent.
  span.setStatus({ code: SpanStatusCode.ERROR });
}

class RecordedSpan implements ChildSpan {
  readonly traceparent: string;

  constructor(
    private readonly span: Span,
    readonly tracestate: string | undefined,
  ) {
    const { traceId, spanId, traceFlags } = span.spanContext();
    this.traceparent = formatTraceparent(traceId, spanId, (traceFlags & 1) === 1);
  }

  setAttribute(name: string, value: string | number | boolean): void {
    this.span.setAttribute(name, value);
  }

  end(failed?: unknown): void {
    if (failed !== undefined) failedSpan(this.span);
    this.span.end();
  }
}

export class RecordedRequest implements RequestTrace {
  readonly recording: boolean;
  private readonly span: Span;
  private readonly context: Context;
  private readonly tracestate: string | undefined;
  private readonly method: string;

  constructor(
    private readonly tracer: Tracer,
    headers: IncomingHttpHeaders,
    method: string,
  ) {
    const parent = remoteParentOf(headers);
    const parentContext = parent
      ? trace.setSpanContext(ROOT_CONTEXT, { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.flags & 1, isRemote: true })
      : ROOT_CONTEXT;
    this.method = KNOWN_METHODS.has(method) ? method : '_OTHER';
    this.span = tracer.startSpan(this.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': this.method } }, parentContext);
    this.context = trace.setSpan(ROOT_CONTEXT, this.span);
    this.tracestate = parent?.tracestate;
    this.recording = this.span.isRecording();
  }

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  startSpan(name: string, options: SpanOptions = {}): ChildSpan {
    const kind = options.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL;
    return new RecordedSpan(this.tracer.startSpan(name, { kind, attributes: definedOnly(options.attributes) }, this.context), this.tracestate);
  }

  describe(attributes: SpanAttributes): void {
    this.span.setAttributes(definedOnly(attributes));
  }

  finish(route: string, status: number, userId: number | undefined): void {
    this.span.updateName(`${this.method} ${route}`);
    this.span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
    if (userId !== undefined) this.span.setAttribute('enduser.id', String(userId));
    if (status >= 500) failedSpan(this.span);
    this.span.end();
  }
}

function definedOnly(attributes: SpanAttributes | undefined): Record<string, string | number | boolean> {
  const defined: Record<string, string | number | boolean> = {};
  for (const name in attributes) {
    const value = attributes[name];
    if (value !== undefined) defined[name] = value;
  }
  return defined;
}
