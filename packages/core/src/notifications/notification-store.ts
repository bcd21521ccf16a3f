import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { claimDue, FULL, HELD } from '../db/claims.js';
import type { Database } from '../db/connect.js';
import { lockRow, writeTransaction } from '../db/write-transaction.js';
import { invalidPayload, type FieldProblem } from '../errors.js';

/** A delivery's status: pending until a 2xx (delivered) or its last attempt (failed). */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** An event for the outbox: its body as sent, and the sinks it goes to. */
export interface OutboxEvent {
  type: string;
  runId: string | null;
  body: Record<string, unknown>;
  sinks: readonly string[];
  at: number;
}

/** One attempt, as recorded and listed. */
export interface AttemptRecord {
  at: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** A delivery claimed by this instance: what its attempt sends. */
export interface ClaimedDelivery {
  id: string;
  sink: string;
  event: string;
  body: string;
  attempts: number;
  roundAttempts: number;
  roundAt: number;
}

/** What an attempt decided: delivered, due again at `nextAt`, or failed for good. */
export type AttemptOutcome = { status: 'delivered' } | { status: 'pending'; nextAt: number } | { status: 'failed' };

export interface DeliveryFilters {
  status?: DeliveryStatus;
  sink?: string;
  event?: string;
  limit: number;
  cursor?: { createdAt: number; id: string };
  /** One delivery only. */
  id?: string;
}

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
/** Attempts listed per delivery: the newest (max_attempts is at most 50, redelivers add rounds). */
const ATTEMPTS_LISTED = 100;

/** The `webhook-id` of a delivery, the same for every attempt: `msg_` and 128 random bits. */
const newDeliveryId = (): string => `msg_${randomBytes(16).toString('hex')}`;
const newEventId = (): string => randomBytes(16).toString('hex');

/**
 * Writes an event and one delivery per sink, in the transaction of the state change that causes it: the event is
 * never lost (committed with the change) and never made up (rolled back with it).
 */
export async function writeEvent(trx: Knex.Transaction, event: OutboxEvent): Promise<void> {
  if (event.sinks.length === 0) return;
  const id = newEventId();
  await trx('notification_events').insert({ id, type: event.type, run_id: event.runId, body: JSON.stringify(event.body), created_at: event.at });
  await trx('notification_deliveries').insert(
    [...new Set(event.sinks)].map((sink) => ({
      id: newDeliveryId(),
      event_id: id,
      event: event.type,
      sink,
      status: 'pending',
      attempts: 0,
      round_attempts: 0,
      created_at: event.at,
      round_at: event.at,
      next_at: event.at,
    })),
  );
}

/** A streak of one rule and endpoint: its failures in a row and whether the rule sent their run.failed. */
export interface Streak {
  failures: number;
  failedSent: boolean;
}

/** Reads a streak under its row's lock (made on first use), so that run ends on several instances count one after another. */
export async function lockStreak(trx: Knex.Transaction, rule: string): Promise<Streak> {
  let row = await lockRow(trx, 'notification_streaks', { rule }, ['failures', 'failed_sent']);
  if (!row) {
    await trx('notification_streaks').insert({ rule, failures: 0, failed_sent: false }).onConflict('rule').ignore();
    row = await lockRow(trx, 'notification_streaks', { rule }, ['failures', 'failed_sent']);
  }
  return { failures: Number(row?.failures ?? 0), failedSent: row?.failed_sent === true || Number(row?.failed_sent) === 1 };
}

export async function saveStreak(trx: Knex.Transaction, rule: string, streak: Streak): Promise<void> {
  await trx('notification_streaks').where({ rule }).update({ failures: streak.failures, failed_sent: streak.failedSent });
}

const text = (value: unknown): string | undefined => {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first !== '' ? first : undefined;
};

/** `GET admin/notifications`'s and `tkgate notifications list`'s filters; a bad one is 400 invalid_payload naming it. */
export function parseDeliveryFilters(query: Record<string, unknown>): DeliveryFilters {
  const problems: FieldProblem[] = [];
  const filters: DeliveryFilters = { limit: DEFAULT_LIMIT };
  const status = text(query.status);
  if (status !== undefined) {
    if ((DELIVERY_STATUSES as readonly string[]).includes(status)) filters.status = status as DeliveryStatus;
    else problems.push({ field: 'status', rule: 'enum', message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` });
  }
  const sink = text(query.sink);
  if (sink !== undefined) filters.sink = sink;
  const event = text(query.event);
  if (event !== undefined) filters.event = event;
  const limit = text(query.limit);
  if (limit !== undefined) {
    if (/^\d{1,4}$/.test(limit) && Number(limit) >= 1 && Number(limit) <= MAX_LIMIT) filters.limit = Number(limit);
    else problems.push({ field: 'limit', rule: 'range', message: `limit must be a whole number from 1 to ${MAX_LIMIT}` });
  }
  const cursor = text(query.cursor);
  if (cursor !== undefined) {
    const match = /^(\d{1,16})\.(msg_[0-9a-f]{32})$/.exec(cursor);
    if (match) filters.cursor = { createdAt: Number(match[1]), id: match[2]! };
    else problems.push({ field: 'cursor', rule: 'format', message: 'cursor must be a next_cursor of an earlier page' });
  }
  if (problems.length > 0) throw invalidPayload(problems, 'invalid notifications query');
  return filters;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** One delivery as listed: `GET admin/notifications`'s `deliveries` entries. */
export interface DeliveryListing {
  id: string;
  event: string;
  sink: string;
  status: DeliveryStatus;
  webhook_id: string;
  run_id: string | null;
  created_at: string;
  next_at: string | null;
  attempts: Array<{ at: string; status_code: number | null; error: string | null; duration_ms: number }>;
}

/** The database side of notifications: the outbox's deliveries, their claims and their attempts. */
export class NotificationStore {
  constructor(private readonly db: Database) {}

  /**
   * Claims up to `limit` due deliveries for this instance until `leaseUntil`, the longest due first, through the
   * claim of runs and schedule fires (db/claims.ts): one short transaction whose due rows are read skip-locked, so
   * instances claiming at once take different deliveries and never wait on each other. A delivery is due while
   * pending, its `next_at` has come and no live lease holds it (one that ran out is due again: at least once).
   * Resolves to what their attempts send.
   */
  async claimDue(instance: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
    const claimed = await claimDue<Record<string, unknown>>(this.db, {
      table: 'notification_deliveries',
      key: 'id',
      due: (query) =>
        query
          .where({ status: 'pending' })
          .andWhere('next_at', '<=', now)
          .andWhere((free) => free.whereNull('lease_until').orWhere('lease_until', '<', now)),
      order: [{ column: 'next_at' }, { column: 'id' }],
      columns: ['id', 'event_id', 'sink', 'event', 'attempts', 'round_attempts', 'round_at'],
      candidates: limit,
      lease: { lease_until: leaseUntil, leased_by: instance },
    });
    if (claimed === FULL || claimed === HELD || claimed.length === 0) return [];
    const bodies = new Map<string, string>();
    const events = [...new Set(claimed.map((row) => String(row.event_id)))];
    for (const row of (await this.db('notification_events').whereIn('id', events).select('id', 'body')) as Array<Record<string, unknown>>)
      bodies.set(String(row.id), String(row.body));
    // A delivery whose event is gone (purged meanwhile) is not sent: its lease runs out, as before it was read.
    return claimed
      .filter((row) => bodies.has(String(row.event_id)))
      .map((row) => ({
        id: String(row.id),
        sink: String(row.sink),
        event: String(row.event),
        body: bodies.get(String(row.event_id))!,
        attempts: Number(row.attempts),
        roundAttempts: Number(row.round_attempts),
        roundAt: Number(row.round_at),
      }));
  }

  /** Records an attempt and its outcome, while the claim is still this instance's (false: it was lost meanwhile). */
  async finish(delivery: ClaimedDelivery, instance: string, attempt: AttemptRecord, outcome: AttemptOutcome): Promise<boolean> {
    return writeTransaction(this.db, async (trx) => {
      const changed = await trx('notification_deliveries')
        .where({ id: delivery.id, leased_by: instance, status: 'pending' })
        .update({
          status: outcome.status,
          attempts: delivery.attempts + 1,
          round_attempts: delivery.roundAttempts + 1,
          next_at: outcome.status === 'pending' ? outcome.nextAt : attempt.at,
          lease_until: null,
          leased_by: null,
          ended_at: outcome.status === 'pending' ? null : attempt.at + attempt.durationMs,
        });
      if (Number(changed) !== 1) return false;
      await trx('notification_attempts').insert({
        delivery_id: delivery.id,
        attempt: delivery.attempts + 1,
        at: attempt.at,
        status_code: attempt.statusCode,
        error: attempt.error === null ? null : attempt.error.slice(0, 500),
        duration_ms: Math.round(attempt.durationMs),
      });
      return true;
    });
  }

  /**
   * Makes a delivery due again now, as the same event (its id, the `webhook-id`, stays); its attempts count
   * toward max_attempts and give_up_after afresh. False: no such delivery.
   */
  async redeliver(id: string, now: number): Promise<boolean> {
    const changed = await this.db('notification_deliveries')
      .where({ id })
      .update({ status: 'pending', next_at: now, round_at: now, round_attempts: 0, ended_at: null });
    return Number(changed) === 1;
  }

  /** Deliveries not delivered nor failed, across instances (tkgate_notifications_pending). */
  async countPending(): Promise<number> {
    const row = await this.db('notification_deliveries').where({ status: 'pending' }).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** A page of deliveries, newest first, each with its attempts (one read for the page's attempts). */
  async list(filters: DeliveryFilters): Promise<{ deliveries: DeliveryListing[]; next_cursor: string | null }> {
    const query = this.db('notification_deliveries as d')
      .join('notification_events as e', 'e.id', 'd.event_id')
      .select('d.id', 'd.event', 'd.sink', 'd.status', 'd.created_at', 'd.next_at', 'e.run_id');
    if (filters.id) query.where('d.id', filters.id);
    if (filters.status) query.where('d.status', filters.status);
    if (filters.sink) query.where('d.sink', filters.sink);
    if (filters.event) query.where('d.event', filters.event);
    const cursor = filters.cursor;
    if (cursor)
      query.andWhere((older) =>
        older.where('d.created_at', '<', cursor.createdAt).orWhere((same) => same.where('d.created_at', cursor.createdAt).andWhere('d.id', '<', cursor.id)),
      );
    const rows = (await query
      .orderBy([
        { column: 'd.created_at', order: 'desc' },
        { column: 'd.id', order: 'desc' },
      ])
      .limit(filters.limit + 1)) as Array<Record<string, unknown>>;
    const more = rows.length > filters.limit;
    const page = rows.slice(0, filters.limit);
    const attempts = await this.attemptsOf(page.map((row) => String(row.id)));
    const deliveries = page.map((row) => {
      const status = String(row.status) as DeliveryStatus;
      return {
        id: String(row.id),
        event: String(row.event),
        sink: String(row.sink),
        status,
        webhook_id: String(row.id),
        run_id: row.run_id === null ? null : String(row.run_id),
        created_at: iso(Number(row.created_at)),
        next_at: status === 'pending' ? iso(Number(row.next_at)) : null,
        attempts: attempts.get(String(row.id)) ?? [],
      };
    });
    const last = page.at(-1);
    return { deliveries, next_cursor: more && last ? `${Number(last.created_at)}.${String(last.id)}` : null };
  }

  /** One delivery as listed, or undefined. */
  async get(id: string): Promise<DeliveryListing | undefined> {
    const { deliveries } = await this.list({ limit: 1, id });
    return deliveries[0];
  }

  private async attemptsOf(ids: string[]): Promise<Map<string, DeliveryListing['attempts']>> {
    const byDelivery = new Map<string, DeliveryListing['attempts']>();
    if (ids.length === 0) return byDelivery;
    const rows = (await this.db('notification_attempts')
      .whereIn('delivery_id', ids)
      .orderBy([{ column: 'delivery_id' }, { column: 'attempt' }])
      .select('delivery_id', 'at', 'status_code', 'error', 'duration_ms')) as Array<Record<string, unknown>>;
    for (const row of rows) {
      const list = byDelivery.get(String(row.delivery_id)) ?? [];
      list.push({
        at: iso(Number(row.at)),
        status_code: row.status_code === null ? null : Number(row.status_code),
        error: row.error === null ? null : String(row.error),
        duration_ms: Number(row.duration_ms),
      });
      if (list.length > ATTEMPTS_LISTED) list.shift();
      byDelivery.set(String(row.delivery_id), list);
    }
    return byDelivery;
  }
}
