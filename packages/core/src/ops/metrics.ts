/**
 * The gateway's Prometheus metrics (docs/operating.md, "Metrics"), in a registry of its own (never prom-client's global
 * one). With metrics.enabled false every method is a no-op, nothing is collected and prom-client is not
 * even loaded (CLI commands start faster without it).
 */
import type { Registry } from 'prom-client';
import type { PluginMetrics } from '../plugins/plugin-api.js';
import { TalliedCounter, TalliedHistogram } from './tallied-metrics.js';

export type LoginResult = 'success' | 'invalid' | 'rate_limited' | 'busy';
/** How a person signed in: a password, or an OpenID Connect provider (the exchange of a login_code). */
export type LoginMethod = 'password' | 'oidc';
export type ReloadResult = 'applied' | 'refused';
/** What a call did when the rate-limit store could not answer (rate_limits.on_store_failure). */
export type StoreFailureOutcome = 'denied' | 'allowed';

export interface GatewayMetrics extends PluginMetrics {
  /** The registry to scrape; undefined when metrics are off. */
  readonly registry: Registry | undefined;
  request(route: string, status: number, seconds: number): void;
  login(result: LoginResult, method?: LoginMethod): void;
  reload(result: ReloadResult): void;
  upstream(toolkit: string, endpoint: string, seconds: number): void;
  /** tkgate_audit_write_failures_total: an audit event that could not be written (audit.required false: logged and counted). */
  auditWriteFailure(): void;
  /** A call refused 429 by its rate limit, by route template. */
  rateLimited(route: string): void;
  /** A call whose rate-limit store did not answer. */
  rateLimitStoreFailure(outcome: StoreFailureOutcome): void;
  /** The live sessions in the database, counted at every scrape (one figure for all workers: their max). */
  sessions(read: () => Promise<number>): void;
  /** tkgate_runs_total: a run ended, by its endpoint and status. */
  runEnded(toolkit: string, endpoint: string, status: string): void;
  /** tkgate_schedule_fires_total: a schedule's fire recorded by this instance, by schedule id and outcome. */
  scheduleFire(schedule: string, outcome: string): void;
  /**
   * tkgate_runs_running (this instance's, summed over workers), tkgate_runs_queued and tkgate_runs_awaiting_approval
   * (the database's, across instances).
   */
  runs(running: () => number, queued: () => Promise<number>, awaiting: () => Promise<number>): void;
  /** tkgate_notifications_total: one delivery attempt's outcome (delivered, retried, failed), by sink. */
  notified(sink: string, outcome: string): void;
  /** tkgate_notifications_pending: deliveries not yet delivered nor failed, across instances. */
  notificationsPending(read: () => Promise<number>): void;
}

/** Seconds: from a fast status call (~1 ms) to a slow upstream (the default timeouts are 10 s). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const noMetrics: GatewayMetrics = {
  registry: undefined,
  request: () => undefined,
  login: () => undefined,
  reload: () => undefined,
  upstream: () => undefined,
  auditWriteFailure: () => undefined,
  rateLimited: () => undefined,
  rateLimitStoreFailure: () => undefined,
  sessions: () => undefined,
  runEnded: () => undefined,
  scheduleFire: () => undefined,
  runs: () => undefined,
  notified: () => undefined,
  notificationsPending: () => undefined,
  gauge: () => undefined,
  counter: () => () => () => undefined,
  labelledGauge: () => undefined,
};

export async function createMetrics(enabled: boolean): Promise<GatewayMetrics> {
  if (!enabled) return noMetrics;
  const { Counter, Gauge, Registry, collectDefaultMetrics } = await import('prom-client');
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  // The three recorded per request are tallied (tallied-metrics.ts); the rest are prom-client's own.
  const requests = new TalliedCounter(registry, 'tkgate_requests_total', 'Requests answered, by route template and status', ['route', 'status']);
  const durations = new TalliedHistogram(
    registry,
    'tkgate_request_duration_seconds',
    'Time to answer a request, by route template',
    ['route'],
    LATENCY_BUCKETS,
  );
  const logins = new Counter({ name: 'tkgate_logins_total', help: 'Login attempts by result and method', labelNames: ['result', 'method'], registers });
  const reloads = new Counter({
    name: 'tkgate_toolkit_reloads_total',
    help: 'Toolkit directory reloads by result (refused: at least one file refused)',
    labelNames: ['result'],
    registers,
  });
  const upstreams = new TalliedHistogram(
    registry,
    'tkgate_upstream_duration_seconds',
    "Time an endpoint's type took to answer (HTTP upstream, command or queries), by toolkit and endpoint",
    ['toolkit', 'endpoint'],
    LATENCY_BUCKETS,
  );
  const auditWriteFailures = new Counter({
    name: 'tkgate_audit_write_failures_total',
    help: 'Audit events that could not be written (with audit.required false the action went on)',
    registers,
  });
  const rateLimited = new Counter({
    name: 'tkgate_rate_limited_total',
    help: 'Calls refused 429 by a rate limit, by route template',
    labelNames: ['route'],
    registers,
  });
  const storeFailures = new Counter({
    name: 'tkgate_rate_limit_store_failures_total',
    help: 'Calls whose rate-limit store did not answer, by outcome (rate_limits.on_store_failure)',
    labelNames: ['outcome'],
    registers,
  });
  const scheduleFires = new Counter({
    name: 'tkgate_schedule_fires_total',
    help: "Schedules' fires recorded by this instance, by schedule id and outcome (started, skipped, missed, failed)",
    labelNames: ['schedule', 'outcome'],
    registers,
  });
  const runsEnded = new Counter({
    name: 'tkgate_runs_total',
    help: 'Runs ended, by toolkit, endpoint and status (succeeded, failed, timed_out, cancelled, lost)',
    labelNames: ['toolkit', 'endpoint', 'status'],
    registers,
  });
  const notifications = new Counter({
    name: 'tkgate_notifications_total',
    help: 'Notification delivery attempts, by sink and outcome (delivered, retried, failed)',
    labelNames: ['sink', 'outcome'],
    registers,
  });
  // Zero rows for every result, so rate() and dashboards see the series before the first event.
  for (const result of ['success', 'invalid', 'rate_limited', 'busy']) logins.inc({ result, method: 'password' }, 0);
  for (const result of ['success', 'invalid']) logins.inc({ result, method: 'oidc' }, 0);
  for (const result of ['applied', 'refused']) reloads.inc({ result }, 0);
  for (const outcome of ['denied', 'allowed']) storeFailures.inc({ outcome }, 0);

  const gauge = (name: string, help: string, read: () => number) => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  };
  /** Every worker reads the same database figure: the cluster's scrape keeps one of them, not their sum. */
  const databaseGauge = (name: string, help: string, read: () => Promise<number>) => {
    new Gauge({
      name,
      help,
      registers,
      aggregator: 'max',
      async collect() {
        this.set(await read());
      },
    });
  };
  const counter = (name: string, help: string, labelNames: readonly string[]) => {
    const tallied = new TalliedCounter(registry, name, help, labelNames);
    return (labelValues: readonly string[]) => {
      const series = tallied.seriesOf(labelValues);
      return () => {
        series.count += 1;
      };
    };
  };
  const labelledGauge = (
    name: string,
    help: string,
    labelNames: readonly string[],
    read: () => Iterable<readonly [readonly string[], number]>,
    aggregator: 'sum' | 'min' | 'max' = 'sum',
  ) => {
    new Gauge({
      name,
      help,
      labelNames: [...labelNames],
      registers,
      aggregator,
      collect() {
        this.reset();
        for (const [values, value] of read()) this.set(Object.fromEntries(labelNames.map((label, i) => [label, values[i] ?? ''])), value);
      },
    });
  };
  return {
    registry,
    counter,
    labelledGauge,
    request: (route, status, seconds) => {
      requests.inc([route, status]);
      durations.observe([route], seconds);
    },
    login: (result, method = 'password') => logins.inc({ result, method }),
    reload: (result) => reloads.inc({ result }),
    upstream: (toolkit, endpoint, seconds) => upstreams.observe([toolkit, endpoint], seconds),
    auditWriteFailure: () => auditWriteFailures.inc(),
    rateLimited: (route) => rateLimited.inc({ route }),
    rateLimitStoreFailure: (outcome) => storeFailures.inc({ outcome }),
    sessions: (read) => databaseGauge('tkgate_sessions', 'Live sessions in the database', read),
    runEnded: (toolkit, endpoint, status) => runsEnded.inc({ toolkit, endpoint, status }),
    scheduleFire: (schedule, outcome) => scheduleFires.inc({ schedule, outcome }),
    runs: (running, queued, awaiting) => {
      gauge('tkgate_runs_running', 'Runs running on this instance', running);
      databaseGauge('tkgate_runs_queued', 'Runs waiting to start, across all instances', queued);
      databaseGauge('tkgate_runs_awaiting_approval', 'Runs waiting for approval, across all instances', awaiting);
    },
    notified: (sink, outcome) => notifications.inc({ sink, outcome }),
    notificationsPending: (read) =>
      databaseGauge('tkgate_notifications_pending', 'Notification deliveries waiting to be delivered, across all instances', read),
    gauge,
  };
}
