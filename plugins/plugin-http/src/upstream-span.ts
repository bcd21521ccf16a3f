import type { ChildSpan, TraceContext } from '@tkgate/core';

/** `server.address`, `server.port` and `url.full` of an upstream URL: no query, fragment or user info (they may hold credentials). */
export type SpanTarget = Readonly<Record<string, string | number>>;

export function upstreamTarget(url: string): SpanTarget {
  const parsed = new URL(url);
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return {
    'http.request.method': 'POST',
    'server.address': parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    'server.port': port,
    'url.full': `${parsed.protocol}//${parsed.host}${parsed.pathname}`,
  };
}

/**
 * The upstream call as an http client span of the request (its traceparent goes to the upstream); ends
 * once, failed when `failed` was called. A class: one object per call, not a set of closures.
 */
export class UpstreamSpan {
  readonly child: ChildSpan;
  private failure: unknown;
  private ended = false;

  constructor(trace: TraceContext, target: SpanTarget) {
    this.child = trace.startSpan('POST', { kind: 'client', attributes: target });
  }

  /** The attempt's target (upstream.targets): the span names the URL the call went to last. */
  at(target: SpanTarget): void {
    this.child.setAttribute('server.address', target['server.address']!);
    this.child.setAttribute('server.port', target['server.port']!);
    this.child.setAttribute('url.full', target['url.full']!);
  }

  answered(status: number): void {
    this.child.setAttribute('http.response.status_code', status);
  }

  /** Marks the span failed and gives `err` back, to be thrown. */
  failed<E>(err: E): E {
    this.failure ??= err;
    return err;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.child.end(this.failure);
  }
}
