import got from 'got';
import type { NotificationSinkConfig } from '../config/notification-sinks.js';
import type { ServerConfig } from '../config/server-config.js';
import { describeDatabaseError } from '../db/database-errors.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { SecretReference } from '../secrets/secret-reference.js';
import type { Secrets } from '../secrets/secrets.js';
import { slackMessage, standardWebhook, type FormattedRequest } from './notification-formats.js';
import type { AttemptOutcome, ClaimedDelivery, NotificationStore } from './notification-store.js';

/** How often an instance looks for due deliveries (a new event wakes it at once, a near retry at its time). */
const POLL_MS = 1_000;
/**
 * Deliveries attempted at once. A delivery is claimed only when a place is free for its attempt: a claim's lease
 * covers one attempt (the sink's timeout and a margin), so none waits for its attempt while its lease runs.
 */
const AT_ONCE = 4;
/** A claim outlives the attempt's timeout by this much; past it another instance may try (at least once). */
const LEASE_MARGIN_MS = 5_000;
/**
 * The waits after each attempt, in units of notifications.retry_base (10s by default: about 10s, 1m, 5m, 30m, 2h,
 * 6h, then 12h each), each with ±20 % jitter so that receivers back from an outage are not hit all at once.
 */
const BACKOFF = [1, 6, 30, 180, 720, 2_160, 4_320];
const JITTER = 0.2;

/** The wait after a round's `attempt`-th failed attempt. */
export function backoffMs(attempt: number, baseMs: number, random: () => number = Math.random): number {
  const steps = BACKOFF[Math.min(attempt, BACKOFF.length) - 1]!;
  return Math.round(baseMs * steps * (1 - JITTER + 2 * JITTER * random()));
}

/** One attempt's result: the status code of the answer, or why there was none. */
interface Answer {
  statusCode: number | null;
  error: string | null;
}

/**
 * Delivers the outbox (docs/notifications.md, "Retries and the delivery log"): claims due deliveries (one instance
 * each), posts them with got (retries off: the backoff is ours and lives in the database; redirects not followed;
 * the sink's timeout), records every attempt, and schedules the next one.
 */
export class NotificationDeliverer {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private again = false;
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  /** A claim's length: the longest sink timeout (a delivery's sink is read with its claim) and a margin. */
  private readonly leaseMs: number;

  constructor(
    private readonly store: NotificationStore,
    private readonly sinks: ReadonlyMap<string, NotificationSinkConfig>,
    private readonly s: { config: ServerConfig; secrets: Secrets; log: Logger; metrics: GatewayMetrics; instance: string },
  ) {
    this.leaseMs = Math.max(0, ...[...sinks.values()].map((sink) => sink.timeout)) + LEASE_MARGIN_MS;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Looks for due deliveries now (an event was committed here, or a retry is due). */
  wake(): void {
    if (this.stopping.signal.aborted) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void (async () => {
      try {
        do {
          this.again = false;
          await this.deliverDue();
        } while (this.again && !this.stopping.signal.aborted);
      } catch (err) {
        this.s.log.warn('notifications: could not read due deliveries', describeDatabaseError(err));
      } finally {
        this.ticking = false;
      }
    })();
  }

  /**
   * Attempts due deliveries, at most AT_ONCE at a time: as attempts end, as many more are claimed (one claim per
   * batch of free places), so a slow receiver holds one place, not the others; until none is due.
   */
  private async deliverDue(): Promise<void> {
    const attempts = new Set<Promise<void>>();
    try {
      while (!this.stopping.signal.aborted) {
        const free = AT_ONCE - attempts.size;
        const now = Date.now();
        const claimed = await this.store.claimDue(this.s.instance, now, now + this.leaseMs, free);
        for (const delivery of claimed) {
          const attempt: Promise<void> = this.attempt(delivery)
            .catch((err: unknown) =>
              this.s.log.warn('notifications: an attempt failed', { delivery: delivery.id, error: this.s.secrets.mask.mask((err as Error).message) }),
            )
            .finally(() => {
              attempts.delete(attempt);
              this.inFlight.delete(attempt);
            });
          attempts.add(attempt);
          this.inFlight.add(attempt);
        }
        if (claimed.length < free) break;
        await Promise.race(attempts);
      }
    } finally {
      await Promise.all(attempts);
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const sink = this.sinks.get(delivery.sink);
    const at = Date.now();
    const started = performance.now();
    let answer: Answer;
    if (!sink) answer = { statusCode: null, error: `sink ${delivery.sink} is not in notifications.sinks` };
    else {
      try {
        answer = await this.post(sink, this.format(sink, delivery));
      } catch (err) {
        answer = { statusCode: null, error: this.s.secrets.mask.mask(`the request could not be made: ${(err as Error).message}`) };
      }
    }
    if (this.stopping.signal.aborted) return; // the gateway stops: the lease runs out, and the next instance sends it again
    const durationMs = Math.round(performance.now() - started);
    const delivered = answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
    const outcome = this.outcomeOf(delivery, delivered, !sink, at + durationMs);
    try {
      if (!(await this.store.finish(delivery, this.s.instance, { at, statusCode: answer.statusCode, error: answer.error, durationMs }, outcome))) return;
    } catch (err) {
      this.s.log.warn('notifications: an attempt could not be recorded', { delivery: delivery.id, ...describeDatabaseError(err) });
      return;
    }
    this.s.metrics.notified(delivery.sink, outcome.status === 'pending' ? 'retried' : outcome.status);
    const fields = { delivery: delivery.id, sink: delivery.sink, event: delivery.event, attempt: delivery.attempts + 1, status_code: answer.statusCode };
    if (outcome.status === 'failed') this.s.log.warn('notification failed', { ...fields, error: answer.error });
    else if (outcome.status === 'pending') {
      this.s.log.info('notification attempt failed; retrying', { ...fields, error: answer.error, next_at: new Date(outcome.nextAt).toISOString() });
      const wait = outcome.nextAt - Date.now();
      if (wait < POLL_MS) setTimeout(() => this.wake(), Math.max(0, wait)).unref();
    }
  }

  /** Delivered, due again after the backoff, or failed: max_attempts reached, or give_up_after would pass. */
  private outcomeOf(delivery: ClaimedDelivery, delivered: boolean, hopeless: boolean, now: number): AttemptOutcome {
    if (delivered) return { status: 'delivered' };
    const done = delivery.roundAttempts + 1;
    const settings = this.s.config.notifications;
    if (hopeless || done >= settings.max_attempts) return { status: 'failed' };
    const nextAt = now + backoffMs(done, settings.retry_base_ms);
    return nextAt > delivery.roundAt + settings.give_up_after_ms ? { status: 'failed' } : { status: 'pending', nextAt };
  }

  private value(text: string | SecretReference): string {
    return typeof text === 'string' ? text : this.s.secrets.value(text);
  }

  private format(sink: NotificationSinkConfig, delivery: ClaimedDelivery): FormattedRequest {
    return sink.format === 'slack' ? slackMessage(delivery.body) : standardWebhook(this.value(sink.secret!), delivery.id, delivery.body, new Date());
  }

  /**
   * One POST with got: retries off, redirects not followed (a 3xx is the answer, recorded), the sink's timeout
   * for the whole request; only the status is read, the connection closed on it (no answer's body is kept).
   */
  private async post(sink: NotificationSinkConfig, request: FormattedRequest): Promise<Answer> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(sink.headers)) headers[name.toLowerCase()] = this.value(value);
    Object.assign(headers, request.headers, { 'user-agent': 'tkgate-notifications' });
    const stream = got.stream.post(this.value(sink.url), {
      body: request.body,
      headers,
      timeout: { request: sink.timeout },
      retry: { limit: 0 },
      followRedirect: false,
      throwHttpErrors: false,
      signal: this.stopping.signal,
    });
    try {
      const statusCode = await new Promise<number>((resolve, reject) => {
        stream.once('response', (response: { statusCode: number }) => resolve(response.statusCode));
        stream.once('error', reject);
      });
      if (statusCode >= 300 && statusCode < 400) return { statusCode, error: 'redirect not followed' };
      return { statusCode, error: null };
    } catch (err) {
      const error = err as Error & { code?: string };
      const why = error.name === 'TimeoutError' ? `no answer within ${sink.timeout} ms` : error.message;
      return { statusCode: null, error: this.s.secrets.mask.mask(why) };
    } finally {
      stream.destroy();
    }
  }
}
