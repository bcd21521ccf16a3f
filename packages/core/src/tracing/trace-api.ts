/**
 * The trace context of a request as plugins see it (plugin API 1.4, docs/plugins.md "Traces"): its W3C
 * trace id, and child operations (an upstream call, a command) whose `traceparent` the callee gets. The
 * same calls work whether tracing.enabled records spans or not: off, a child is only a new span id.
 */

/** Attribute values of a span. Never a token, a body, a header value or a query string. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

export interface SpanOptions {
  /** `client` for a call to another service (an http upstream), `internal` (the default) for work done here. */
  kind?: 'client' | 'internal';
  attributes?: SpanAttributes;
}

/** One child operation of a request. End it once, whichever way the operation ends. */
export interface ChildSpan {
  /** The `traceparent` a callee gets: the request's trace id and this operation's own span id. */
  readonly traceparent: string;
  /** The `tracestate` to pass on with it: the caller's, when it sent a valid one with a valid traceparent. */
  readonly tracestate: string | undefined;
  setAttribute(name: string, value: string | number | boolean): void;
  /** Ends the operation; with `failed`, marks it as an error (the message is not recorded: it may hold request data). */
  end(failed?: unknown): void;
}

export interface TraceContext {
  /** 32 lowercase hex digits: the caller's trace continued, or a new one. */
  readonly traceId: string;
  /** A child of the request's span, started now. */
  startSpan(name: string, options?: SpanOptions): ChildSpan;
}
