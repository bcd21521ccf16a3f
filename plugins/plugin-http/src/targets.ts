import http from 'node:http';
import https from 'node:https';
import type { EndpointIdentity, Logger, PluginMetrics } from '@tkgate/core';
import { targetsOf, type UpstreamConfig } from './http-config.js';
import { attemptFailureOf, noHealthyTarget, type Outcome } from './upstream-failure.js';
import { upstreamTarget, type SpanTarget } from './upstream-span.js';
import { tlsConnectOptions, tlsOf } from './upstream-tls.js';

/**
 * `upstream.targets` (docs/toolkits.md, "Several targets"): several upstreams serving one API. A TargetSet per endpoint version
 * picks the target of each call (smooth weighted round robin, or the fewest calls running by weight), leaves
 * out a target that failed `passive.failures` times in a row for `passive.eject_for` (then lets one call try
 * it), and, with `health`, probes every target on its own timer. Health is this process's own: each instance,
 * and each worker of an instance, probes and counts for itself (docs/toolkits.md says why).
 *
 * The request path allocates nothing here: a pick walks the set's array, and what was tried is a bit mask.
 */

const OUTCOMES: readonly Outcome[] = ['ok', 'status_5xx', 'not_sent', 'timeout', 'failed', 'invalid', 'aborted'];
/** Outcomes that count towards a passive ejection: no connection, a timeout, a 5xx (and a connection lost before the answer). */
const FAILING: ReadonlySet<Outcome> = new Set(['status_5xx', 'not_sent', 'timeout', 'failed']);

export class Target {
  /** Smooth weighted round robin's running weight. */
  current = 0;
  /** Calls running on it now (least_pending). */
  pending = 0;
  /** Passive failures in a row. */
  failures = 0;
  /** Left out until then (ms since the epoch), 0 when not ejected. */
  ejectedUntil = 0;
  /** An ejected target's one trial call is running. */
  trial = false;
  /** Out by its active probes. */
  probedDown = false;
  probePasses = 0;
  probeFails = 0;
  /** What was last logged and reported: 1 up, 0 down. */
  up = 1;
  /** Counts one call per outcome (tkgate_upstream_requests_total), bound once. */
  readonly count: Record<Outcome, () => void>;
  /** The target as the attributes of a call's span. */
  readonly span: SpanTarget;

  constructor(
    /** 1 << its index in the set: what `tried` masks hold. */
    readonly bit: number,
    readonly url: string,
    readonly weight: number,
    /** The URL without user info, query or fragment: the `target` label and the log's. */
    readonly label: string,
    count: (outcome: Outcome) => () => void,
  ) {
    this.count = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, count(outcome)])) as Record<Outcome, () => void>;
    this.span = upstreamTarget(url);
  }
}

/** A URL as a label: scheme, host and path only (user info and query may hold credentials). */
function labelOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

export interface TargetHooks {
  log: Logger;
  metrics: PluginMetrics;
}

/** The targets of one endpoint version. */
export class TargetSet {
  readonly targets: Target[];
  /** Targets now ejected or probed down: when 0, a pick reads no clock. */
  private out = 0;
  /** Where least_pending's scan starts, turned per pick so that ties spread. */
  private start = 0;
  private readonly probes: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly upstream: UpstreamConfig,
    readonly endpoint: EndpointIdentity,
    private readonly log: Logger,
    count: (labels: readonly string[]) => () => void,
  ) {
    this.targets = targetsOf(upstream).map(({ url, weight }, i) => {
      const label = labelOf(url);
      return new Target(1 << i, url, weight, label, (outcome) => count([endpoint.toolkit, endpoint.path, label, outcome]));
    });
    const health = upstream.health;
    if (health) {
      this.probes = setInterval(() => this.probeAll(), health.interval).unref();
      this.probeAll();
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.probes);
  }

  /**
   * The target for the next attempt, leaving out those in `tried` (bit i: target i) and those out of service;
   * undefined when none is left. An ejected target whose time is up gets one trial call.
   */
  pick(tried: number): Target | undefined {
    const targets = this.targets;
    const now = this.out === 0 ? 0 : Date.now();
    let best: Target | undefined;
    if (this.upstream.balance === 'least_pending') {
      const n = targets.length;
      const start = (this.start = (this.start + 1) % n);
      for (let k = 0; k < n; k++) {
        const i = (start + k) % n;
        const target = targets[i]!;
        if ((tried & target.bit) !== 0 || !this.available(target, now)) continue;
        if (!best || target.pending * best.weight < best.pending * target.weight) best = target;
      }
    } else {
      let total = 0;
      for (let i = 0; i < targets.length; i++) {
        const target = targets[i]!;
        if ((tried & target.bit) !== 0 || !this.available(target, now)) continue;
        target.current += target.weight;
        total += target.weight;
        if (!best || target.current > best.current) best = target;
      }
      if (best) best.current -= total;
    }
    if (best && best.ejectedUntil !== 0) best.trial = true;
    return best;
  }

  private available(target: Target, now: number): boolean {
    if (target.probedDown) return false;
    if (target.ejectedUntil === 0) return true;
    return now >= target.ejectedUntil && !target.trial;
  }

  /** A call to `target` ended with `outcome`: counted, and its passive health updated. */
  finished(target: Target, outcome: Outcome): void {
    target.count[outcome]();
    if (outcome === 'aborted') {
      target.trial = false;
      return;
    }
    if (!FAILING.has(outcome)) {
      target.failures = 0;
      if (target.ejectedUntil !== 0) {
        target.ejectedUntil = 0;
        target.trial = false;
        this.changed(target, 'a call succeeded');
      }
      return;
    }
    target.failures += 1;
    if (target.trial || target.failures >= this.upstream.passive.failures) {
      target.trial = false;
      target.ejectedUntil = Date.now() + this.upstream.passive.eject_for;
      this.changed(target, `${target.failures} failed calls in a row (last: ${outcome})`);
    }
  }

  /** Logs and reports a change of a target's state, once per change. */
  private changed(target: Target, why: string): void {
    const up = !target.probedDown && target.ejectedUntil === 0 ? 1 : 0;
    this.out = this.targets.reduce((sum, each) => sum + (each.probedDown || each.ejectedUntil !== 0 ? 1 : 0), 0);
    if (up === target.up) return;
    target.up = up;
    const fields = { toolkit: this.endpoint.toolkit, endpoint: this.endpoint.path, target: target.label, reason: why };
    if (up) this.log.info('upstream target up', fields);
    else this.log.warn('upstream target down', fields);
  }

  private probeAll(): void {
    for (const target of this.targets) this.probe(target);
  }

  private probe(target: Target): void {
    const health = this.upstream.health!;
    const url = new URL(health.path, target.url.replace(/^ws/, 'http'));
    const secure = url.protocol === 'https:';
    let settled = false;
    const settle = (passed: boolean, why: string) => {
      if (settled || this.closed) return;
      settled = true;
      if (passed) {
        target.probeFails = 0;
        target.probePasses += 1;
        if (target.probedDown && target.probePasses >= health.healthy) {
          target.probedDown = false;
          // Back by its probes: its passive record starts afresh.
          target.ejectedUntil = 0;
          target.failures = 0;
          this.changed(target, `${target.probePasses} health probes passed`);
        }
      } else {
        target.probePasses = 0;
        target.probeFails += 1;
        if (!target.probedDown && target.probeFails >= health.unhealthy) {
          target.probedDown = true;
          this.changed(target, `${target.probeFails} health probes failed (last: ${why})`);
        }
      }
    };
    const options = {
      method: 'GET',
      agent: false,
      headers: { 'user-agent': 'tkgate-health' },
      timeout: health.timeout,
      ...(secure ? tlsConnectOptions(tlsOf(this.upstream), url.hostname) : {}),
    };
    const request = (secure ? https : http).request(url, options, (response) => {
      response.resume();
      const status = response.statusCode ?? 0;
      settle(status >= 200 && status <= 299, `status ${status}`);
    });
    request.on('timeout', () => {
      settle(false, 'timeout');
      request.destroy();
    });
    request.on('error', (err: NodeJS.ErrnoException) => settle(false, err.code ?? 'error'));
    request.end();
  }
}

/**
 * The target sets of every endpoint version with targets, made at its first call and closed when core retires
 * the version (EndpointType.onRetire); the metrics read them at each scrape.
 */
export class TargetSets {
  private readonly sets = new Map<object, TargetSet>();
  private readonly count: (labels: readonly string[]) => () => void;

  constructor(private readonly hooks: TargetHooks) {
    this.count = hooks.metrics.counter(
      'tkgate_upstream_requests_total',
      'Calls to each target of an upstream with targets, by outcome (ok, status_5xx, not_sent, timeout, failed, invalid, aborted)',
      ['toolkit', 'endpoint', 'target', 'outcome'],
    );
    // A worker that has a target out says 0: the instance's figure is the least of its workers'.
    hooks.metrics.labelledGauge(
      'tkgate_upstream_target_up',
      'Whether a target of an upstream is in service (1) or left out (0), by this instance',
      ['toolkit', 'endpoint', 'target'],
      () => this.up(),
      'min',
    );
  }

  of(endpoint: EndpointIdentity, upstream: UpstreamConfig): TargetSet {
    let set = this.sets.get(endpoint.key);
    if (!set) this.sets.set(endpoint.key, (set = new TargetSet(upstream, endpoint, this.hooks.log, this.count)));
    return set;
  }

  retire(key: object): void {
    this.sets.get(key)?.close();
    this.sets.delete(key);
  }

  close(): void {
    for (const set of this.sets.values()) set.close();
    this.sets.clear();
  }

  private *up(): Generator<readonly [readonly string[], number]> {
    for (const set of this.sets.values()) {
      const { toolkit, path } = set.endpoint;
      for (const target of set.targets) yield [[toolkit, path, target.label], target.up] as const;
    }
  }
}

/** A call's outcome from its answer's status. */
export const outcomeOfStatus = (status: number): Outcome => (status >= 500 ? 'status_5xx' : 'ok');

/** Attempts shorter than this are not started: the call's time is up. */
const MIN_ATTEMPT_MS = 50;

/**
 * One call across the set's targets. `attempt` makes it on one target within `timeoutMs`. A call that could not
 * be sent goes to the next target whatever its method; one sent but unanswered (timeout, connection lost) goes
 * to at most `upstream.retries` other targets, and only when `retrySent` (a GET, or an idempotent endpoint).
 * The whole stays within `timeoutMs`: a call that may be retried gives each attempt its share of what is left.
 * An answer, whatever its status, is the call's: a 5xx counts against its target, and is not retried.
 */
export async function acrossTargets<T>(
  set: TargetSet,
  retrySent: boolean,
  timeoutMs: number,
  attempt: (target: Target, timeoutMs: number) => Promise<T>,
  statusOf: (result: T) => number,
): Promise<T> {
  const started = Date.now();
  let retriesLeft = retrySent ? set.upstream.retries : 0;
  let tried = 0;
  let last: unknown;
  for (;;) {
    const target = set.pick(tried);
    if (!target) throw last ?? noHealthyTarget();
    tried |= target.bit;
    const remaining = timeoutMs - (Date.now() - started);
    const share = Math.max(MIN_ATTEMPT_MS, Math.floor(remaining / (retriesLeft + 1)));
    target.pending += 1;
    try {
      const result = await attempt(target, share);
      target.pending -= 1;
      set.finished(target, outcomeOfStatus(statusOf(result)));
      return result;
    } catch (err) {
      target.pending -= 1;
      const failure = attemptFailureOf(err);
      set.finished(target, failure.outcome);
      last = err;
      if (failure.outcome === 'aborted' || failure.outcome === 'invalid') throw err;
      if (failure.sent) {
        if (retriesLeft === 0 || (failure.outcome !== 'timeout' && failure.outcome !== 'failed')) throw err;
        retriesLeft -= 1;
      }
      if (timeoutMs - (Date.now() - started) < MIN_ATTEMPT_MS) throw err;
    }
  }
}
