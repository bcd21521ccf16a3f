import { createHash } from 'node:crypto';
import type { Database } from '../db/connect.js';
import { isUniqueViolation } from '../db/database-errors.js';

/** How long a delivery id is remembered (24 h): a redelivery later than that runs again. */
export const DELIVERY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A first delivery still unanswered after this was lost with its instance: a redelivery takes it over. */
export const ABANDONED_AFTER_MS = 10 * 60 * 1000;

/** The first delivery's answer, as a redelivery gets it. */
export interface DeliveryAnswer {
  status: number;
  body: unknown;
  location: string | null;
}

export type Claim = { claimed: true } | { claimed: false; answer: DeliveryAnswer } | { claimed: false; pending: true };

interface DeliveryRow {
  status: number | null;
  body: string | null;
  location: string | null;
  created_at: number | string;
}

/**
 * Delivery ids of signed calls (trigger_deliveries), shared by every instance: the first delivery claims its id
 * (a unique key: one instance wins), runs, and records its answer; a redelivery finds the answer. A refused or
 * failed first delivery is forgotten, so its redelivery runs.
 */
export class TriggerDeliveries {
  private lastPurge = 0;

  constructor(private readonly db: Database) {}

  static keyOf(toolkit: string, endpoint: string, delivery: string): string {
    return createHash('sha256').update(`${toolkit}\n${endpoint}\n${delivery}`).digest('hex');
  }

  /** Claims a delivery id, or says what its first delivery answered (or that it is still being answered). */
  async claim(key: string, where: { toolkit: string; endpoint: string; delivery: string }, now = Date.now()): Promise<Claim> {
    this.purgeNowAndThen(now);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.db('trigger_deliveries').insert({
          delivery_key: key,
          toolkit: where.toolkit,
          endpoint: where.endpoint,
          delivery_id: where.delivery.slice(0, 255),
          status: null,
          body: null,
          location: null,
          created_at: now,
        });
        return { claimed: true };
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const row = (await this.db('trigger_deliveries').where({ delivery_key: key }).first('status', 'body', 'location', 'created_at')) as
        DeliveryRow | undefined;
      if (!row) continue;
      const createdAt = Number(row.created_at);
      const stale = createdAt < now - DELIVERY_RETENTION_MS || (row.status === null && createdAt < now - ABANDONED_AFTER_MS);
      if (stale) {
        // Only the row as read: another instance that took it over meanwhile keeps its claim.
        await this.db('trigger_deliveries').where({ delivery_key: key, created_at: row.created_at }).delete();
        continue;
      }
      if (row.status === null) return { claimed: false, pending: true };
      return { claimed: false, answer: { status: row.status, body: row.body === null ? null : JSON.parse(row.body), location: row.location } };
    }
    return { claimed: false, pending: true };
  }

  async complete(key: string, answer: DeliveryAnswer): Promise<void> {
    await this.db('trigger_deliveries')
      .where({ delivery_key: key })
      .update({ status: answer.status, body: JSON.stringify(answer.body ?? null), location: answer.location });
  }

  async forget(key: string): Promise<void> {
    await this.db('trigger_deliveries').where({ delivery_key: key }).whereNull('status').delete();
  }

  /** Ids older than the retention go, at most once a minute per instance, as part of a claim (no timer of its own). */
  private purgeNowAndThen(now: number): void {
    if (now - this.lastPurge < 60_000) return;
    this.lastPurge = now;
    this.db('trigger_deliveries')
      .where('created_at', '<', now - DELIVERY_RETENTION_MS)
      .delete()
      .catch(() => undefined);
  }
}
