import { hash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../db/connect.js';
import { writeTransaction } from '../db/write-transaction.js';
import { coreError } from '../errors.js';

/**
 * Failed logins per key (username + client address) within a sliding window, in the database: one limit
 * for every gateway on it and every concurrent request. An attempt is reserved before its password is
 * checked, so a burst checks at most `maxFailures` wrong passwords however many arrive at once, on every
 * instance. Keys are stored as SHA-256 hashes (no usernames in the table).
 *
 * A key's row lists the attempts inside the window: failures (`<ms>`) and reservations still in flight
 * (`<ms>~<id>`). Only failures refuse a login (429): while reservations fill what is left of the budget, a
 * login waits for their outcome instead, so concurrent logins with the right password all go through (a
 * success forgets the key's failures). A reservation whose gateway died counts as a failure once stale.
 */
export type Reservation = { granted: string } | { retryAfterS: number };

/** An attempt in flight longer than this is taken for one whose gateway died: a failure. */
const PENDING_STALE_MS = 30_000;
/** How long a login waits for other attempts of its key before it is answered 503 busy. */
const MAX_WAIT_MS = 20_000;
const FIRST_PAUSE_MS = 20;
const MAX_PAUSE_MS = 250;

interface Attempt {
  at: number;
  /** Set while the attempt is in flight. */
  pending?: string;
}

type Verdict = { granted: string } | { retryAfterS: number } | { wait: true };

export class LoginLimiter {
  constructor(
    private readonly db: Database,
    private readonly maxFailures: number,
    private readonly windowMs: number,
  ) {}

  static key(username: string, clientAddress: string): string {
    return hash('sha256', `${username}\u0000${clientAddress}`, 'hex');
  }

  /**
   * Reserves an attempt for the key, waiting (bounded) while attempts in flight hold the rest of the budget.
   * While it waits it only reads; the reservation itself is one transaction holding the key's row (its
   * upsert comes first, which locks it on every database).
   */
  async reserve(key: string): Promise<Reservation> {
    const deadline = Date.now() + MAX_WAIT_MS;
    for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(MAX_PAUSE_MS, pause * 1.5)) {
      const seen = this.judge(parseAttempts((await this.db('login_failures').where({ key_hash: key }).first('attempts'))?.attempts));
      if (!('wait' in seen)) {
        const verdict = await this.tryReserve(key);
        if (!('wait' in verdict)) return verdict;
      }
      if (Date.now() >= deadline)
        throw coreError('busy', 'other logins of this user are still being checked; try again shortly', { headers: { 'Retry-After': '1' } });
      await sleep(pause * (0.5 + Math.random()));
    }
  }

  /** The reserved attempt failed (a wrong password): it counts against the key from when it was reserved. */
  failed(key: string, reservation: string): Promise<void> {
    return this.settle(key, (attempts, now) => {
      const mine = attempts.find((attempt) => attempt.pending === reservation);
      if (mine) delete mine.pending;
      // A success reset the key meanwhile: the failure still counts, from now.
      else attempts.push({ at: now });
      return attempts;
    });
  }

  /** The reserved attempt ended without a password judged (busy, the database): it counts for nothing. */
  release(key: string, reservation: string): Promise<void> {
    return this.settle(key, (attempts) => attempts.filter((attempt) => attempt.pending !== reservation));
  }

  /** A successful login forgets the key's failures. */
  async reset(key: string): Promise<void> {
    await this.db('login_failures').where({ key_hash: key }).delete();
  }

  /** Deletes keys whose every attempt has left the window. */
  async sweep(now = Date.now()): Promise<void> {
    await this.db('login_failures')
      .where('last_at', '<=', now - this.windowMs)
      .delete();
  }

  /** What the attempts inside the window allow now. */
  private judge(stored: Attempt[], now = Date.now()): Verdict {
    const recent = stored.filter((attempt) => attempt.at > now - this.windowMs);
    const failures = recent.filter((attempt) => !attempt.pending || attempt.at <= now - PENDING_STALE_MS).map((attempt) => attempt.at);
    if (failures.length >= this.maxFailures) {
      const freeAt = failures.sort((x, y) => x - y)[failures.length - this.maxFailures]! + this.windowMs;
      return { retryAfterS: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
    }
    if (recent.length >= this.maxFailures) return { wait: true };
    return { granted: randomBytes(6).toString('hex') };
  }

  private tryReserve(key: string): Promise<Verdict> {
    return writeTransaction(this.db, async (trx) => {
      await trx('login_failures').insert({ key_hash: key, attempts: '', last_at: 0 }).onConflict('key_hash').merge(['key_hash']);
      const row = await trx('login_failures').where({ key_hash: key }).first('attempts');
      const now = Date.now();
      const attempts = parseAttempts(row?.attempts).filter((attempt) => attempt.at > now - this.windowMs);
      const verdict = this.judge(attempts, now);
      if ('granted' in verdict) {
        attempts.push({ at: now, pending: verdict.granted });
        await trx('login_failures')
          .where({ key_hash: key })
          .update({ attempts: formatAttempts(attempts), last_at: now });
      }
      return verdict;
    });
  }

  /** Rewrites the key's attempts in one transaction holding its row (created again if a success removed it). */
  private settle(key: string, change: (attempts: Attempt[], now: number) => Attempt[]): Promise<void> {
    return writeTransaction(this.db, async (trx) => {
      await trx('login_failures').insert({ key_hash: key, attempts: '', last_at: 0 }).onConflict('key_hash').merge(['key_hash']);
      const row = await trx('login_failures').where({ key_hash: key }).first('attempts');
      const now = Date.now();
      const attempts = change(parseAttempts(row?.attempts), now).filter((attempt) => attempt.at > now - this.windowMs);
      const lastAt = attempts.reduce((latest, attempt) => Math.max(latest, attempt.at), 0);
      await trx('login_failures')
        .where({ key_hash: key })
        .update({ attempts: formatAttempts(attempts), last_at: lastAt });
    });
  }
}

function parseAttempts(stored: unknown): Attempt[] {
  if (typeof stored !== 'string' || stored === '') return [];
  return stored
    .split(',')
    .map((entry) => {
      const [at, pending] = entry.split('~');
      return pending ? { at: Number(at), pending } : { at: Number(at) };
    })
    .filter((attempt) => Number.isFinite(attempt.at));
}

const formatAttempts = (attempts: Attempt[]): string =>
  attempts.map((attempt) => (attempt.pending ? `${attempt.at}~${attempt.pending}` : String(attempt.at))).join(',');
