import type { ScheduleFireEvent } from '../schedules/schedules.js';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Knex } from 'knex';
import { Webhook } from 'standardwebhooks';
import type { NotificationSinkConfig } from '../config/notification-sinks.js';
import { ConfigError, type ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import { scopedLogger, type Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { RUN_COLUMNS, toRunRow, type RunRow, type RunStatus } from '../runs/run-record.js';
import type { RunTransition, RunTransitions } from '../runs/run-transitions.js';
import type { Secrets } from '../secrets/secrets.js';
import type { CompiledEndpoint, CompiledNotifyRule } from '../toolkits/compiled-toolkit.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import { NotificationDeliverer } from './notification-deliverer.js';
import { EVENT_OF_STATUS, runEventBody, type LinkBase } from './notification-events.js';
import { lockStreak, NotificationStore, saveStreak, writeEvent } from './notification-store.js';

/**
 * Notifications (docs/notifications.md), in one list:
 * - sinks: `notifications.sinks` of the server configuration (config/notification-sinks.ts), their secret
 *   references opened at start;
 * - rules: `notify` of an endpoint or its toolkit, compiled with the toolkit (toolkits/compile-toolkit.ts);
 * - the outbox: `written`, told of each run's state change inside its transaction (`attach`: RunTransitions.writeWith), writes the
 *   events its endpoint's rules ask for there (notification-store.ts `writeEvent`), streaks included;
 * - the deliverer (notification-deliverer.ts): claims, posts with got, records, retries;
 * - formats (notification-formats.ts): Standard Webhooks signed by its reference library, Slack;
 * - the delivery log and redeliver: notification-routes.ts and `tkgate notifications`, both on NotificationStore.
 * Without sinks none of it is made: no timer, no listener, every run change as it is without notifications.
 */
export interface NotificationServices {
  config: ServerConfig;
  db: Database;
  registry: ToolkitRegistry;
  log: Logger;
  metrics: GatewayMetrics;
  secrets: Secrets;
  /** The instance's name, as runs record it (a claim's holder). */
  instance: string;
}

/** A schedule's event (`schedule.missed`, `schedule.failed`) for `notifyScheduleEvent`: what schedules/ hands over. */
export type ScheduleEvent = ScheduleFireEvent;

/** A streak's row: one per rule (its sink) and endpoint. */
const streakKey = (run: Pick<RunRow, 'toolkit' | 'endpoint' | 'method'>, rule: CompiledNotifyRule): string =>
  createHash('sha256').update(`${run.toolkit}\0${run.endpoint}\0${run.method}\0${rule.sink}`).digest('hex');

/** Whether any endpoint of a snapshot has notify rules. */
function anyRules(snapshot: ToolkitSnapshot): boolean {
  for (const toolkit of snapshot.values())
    for (const byMethod of toolkit.routes.values()) for (const endpoint of byMethod.values()) if (endpoint.notify.length > 0) return true;
  return false;
}

/** A run's change as the outbox reads it: the run, its new status, when. */
interface Change {
  id: string;
  status: RunStatus;
  at: number;
}

export class Notifications {
  readonly store: NotificationStore;
  private readonly deliverer: NotificationDeliverer;
  private readonly links: LinkBase;
  private rulesOf: { snapshot: ToolkitSnapshot; any: boolean } | undefined;

  private constructor(
    private readonly s: NotificationServices,
    sinks: ReadonlyMap<string, NotificationSinkConfig>,
  ) {
    this.store = new NotificationStore(s.db);
    const log = scopedLogger(s.log, { component: 'notifications' });
    this.deliverer = new NotificationDeliverer(this.store, sinks, { ...s, log });
    this.links = { publicUrl: s.config.server.public_url, baseUrl: s.config.server.base_url, console: s.config.console.enabled };
    s.metrics.notificationsPending(() => this.store.countPending());
  }

  /**
   * The gateway's notifications, or undefined without sinks. Each sink's secret references are opened now (a
   * `file:` path relative to the configuration file); one that cannot be, or a signing key that is not
   * `whsec_` and base64, refuses the start naming its key.
   */
  static async open(s: NotificationServices): Promise<Notifications | undefined> {
    const sinks = s.config.notifications.sinks;
    if (sinks.length === 0) return undefined;
    const place = { toolkitFile: s.config.file ?? path.resolve('tkgate.yaml') };
    for (const [index, sink] of sinks.entries()) {
      const problems = await s.secrets.openAll(sink, place);
      if (problems.length > 0) {
        const [problem] = problems;
        throw new ConfigError(`invalid configuration: notifications.sinks.${index}.${problem!.path.join('.')}: ${problem!.message}`);
      }
      if (sink.secret)
        try {
          new Webhook(s.secrets.value(sink.secret));
        } catch {
          throw new ConfigError(`invalid configuration: notifications.sinks.${index}.secret: must be a signing key, whsec_ and base64 (docs/notifications.md)`);
        }
    }
    return new Notifications(s, new Map(sinks.map((sink) => [sink.name, sink])));
  }

  start(): void {
    this.deliverer.start();
  }

  stop(): Promise<void> {
    return this.deliverer.stop();
  }

  /** Looks for due deliveries now (after a redeliver). */
  wake(): void {
    this.deliverer.wake();
  }

  /**
   * Writes with every state change of a run, in its transaction (runs/run-transitions.ts `writeWith`), and wakes
   * the deliverer once the change committed (`onChange`).
   */
  attach(transitions: RunTransitions): void {
    transitions.writeWith((trx, transition: RunTransition) =>
      this.active() ? this.written(trx, [{ id: transition.run.id, status: transition.to, at: transition.at }]) : Promise.resolve(),
    );
    transitions.onChange(() => {
      if (this.active()) this.committed();
    });
  }

  /** Whether any live endpoint has notify rules (asked once per snapshot). */
  active(): boolean {
    const snapshot = this.s.registry.snapshot;
    if (this.rulesOf?.snapshot !== snapshot) this.rulesOf = { snapshot, any: anyRules(snapshot) };
    return this.rulesOf.any;
  }

  committed(): void {
    this.deliverer.wake();
  }

  private endpointOf(run: Pick<RunRow, 'toolkit' | 'endpoint' | 'method'>): CompiledEndpoint | undefined {
    return this.s.registry.snapshot.get(run.toolkit)?.routes.get(run.endpoint)?.get(run.method);
  }

  /** The outbox write: the events the runs' endpoints ask for, in the transaction of the runs' changes. */
  async written(trx: Knex.Transaction, transitions: readonly Change[]): Promise<void> {
    const rows = (await trx('runs')
      .whereIn(
        'id',
        transitions.map((transition) => transition.id),
      )
      .select(RUN_COLUMNS)) as Array<Record<string, unknown>>;
    const runs = new Map(rows.map((row) => [String(row.id), toRunRow(row)]));
    for (const transition of transitions) {
      const run = runs.get(transition.id);
      const rules = run && this.endpointOf(run)?.notify;
      if (!run || !rules || rules.length === 0) continue;
      const sinksByEvent = new Map<string, string[]>();
      for (const rule of rules)
        for (const event of await this.eventsOf(trx, rule, run, EVENT_OF_STATUS[transition.status])) {
          const sinks = sinksByEvent.get(event) ?? [];
          sinks.push(rule.sink);
          sinksByEvent.set(event, sinks);
        }
      for (const [type, sinks] of sinksByEvent)
        await writeEvent(trx, { type, runId: run.id, body: runEventBody(type, run, transition.at, this.links), sinks, at: transition.at });
    }
  }

  /**
   * The events one rule sends for a run's event. A rule with after_consecutive_failures or on_recovery keeps a
   * streak per endpoint: run.failed only for the Nth failure in a row (and not again until a success), and
   * run.recovered for the success after a run.failed it sent.
   */
  private async eventsOf(trx: Knex.Transaction, rule: CompiledNotifyRule, run: RunRow, event: string): Promise<string[]> {
    const tracked = rule.afterConsecutiveFailures !== null || rule.onRecovery;
    if (!tracked || (event !== 'run.failed' && event !== 'run.succeeded')) return rule.events.includes(event) ? [event] : [];
    const key = streakKey(run, rule);
    const streak = await lockStreak(trx, key);
    const events: string[] = [];
    if (event === 'run.failed') {
      streak.failures += 1;
      const nth = rule.afterConsecutiveFailures;
      if (rule.events.includes('run.failed') && (nth === null || streak.failures === nth)) {
        events.push('run.failed');
        streak.failedSent = true;
      }
      await saveStreak(trx, key, streak);
      return events;
    }
    if (streak.failedSent && rule.onRecovery) events.push('run.recovered');
    if (rule.events.includes('run.succeeded')) events.push('run.succeeded');
    if (streak.failures > 0 || streak.failedSent) await saveStreak(trx, key, { failures: 0, failedSent: false });
    return events;
  }

  /**
   * A schedule's event, written in the caller's transaction (the fire's record): to the sinks of the endpoint's
   * rules that list its type. For the fires of scheduled runs.
   */
  async notifyScheduleEvent(trx: Knex.Transaction, event: ScheduleEvent): Promise<void> {
    const rules = this.endpointOf(event)?.notify ?? [];
    const sinks = rules.filter((rule) => rule.events.includes(event.type)).map((rule) => rule.sink);
    if (sinks.length === 0) return;
    const body = {
      type: event.type,
      timestamp: new Date(event.at).toISOString(),
      data: {
        schedule: { id: event.schedule, toolkit: event.toolkit, endpoint: event.endpoint, fire_at: new Date(event.fireAt).toISOString(), reason: event.reason },
        links: {},
      },
    };
    await writeEvent(trx, { type: event.type, runId: null, body, sinks, at: event.at });
  }
}
