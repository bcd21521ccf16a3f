import type { Knex } from 'knex';
import { dialectOf, type Database } from './connect.js';
import { writeTransaction } from './write-transaction.js';

/** What a claim answers when its gate's every place is taken (none claimed): nothing can start before one frees. */
export const FULL = Symbol('full');
/** What a claim answers when another instance holds its gate now: that one is claiming; look again shortly. */
export const HELD = Symbol('held');

/**
 * One claim of due rows by one instance (docs/runs.md, "Claims and wake-ups"): the rows of `table` that `due`
 * selects, oldest first by `order`, are given a lease (`lease`: their owner, its expiry or heartbeat, the state
 * that says they are taken) in one short transaction. On MariaDB and PostgreSQL the rows are read
 * `FOR UPDATE SKIP LOCKED`: rows another instance's claim holds are skipped, never waited for, so claims of many
 * instances run side by side; on SQLite the claim takes the database's one write lock first. Runs, schedule
 * fires and notification deliveries are claimed through it.
 */
export interface Claim<Row> {
  table: string;
  /** The primary key column: the lease is written to the chosen rows by it. */
  key: string;
  /**
   * The rows that are due, as portable knex conditions; the lease's write is made under them again. A lease that
   * ran out makes its row due again when the condition says so (`locked_until < now`, say, for a delivery).
   */
  due(query: Knex.QueryBuilder): Knex.QueryBuilder;
  order: ReadonlyArray<{ column: string; order?: 'asc' | 'desc' }>;
  columns: readonly string[];
  /** The most rows read (and locked) in one claim. */
  candidates: number;
  /**
   * The columns a claimed row is given: a lease that outlives the claim (a run's owner and heartbeat, a delivery's
   * expiry). None: the rows are held only for the claim's transaction, in which `also` writes what makes them
   * taken (a schedule's state row, under which the fire's unique row is inserted).
   */
  lease?: Record<string, unknown>;
  /** What else the claim writes in its transaction, with the rows it claimed (none: not called). */
  also?(trx: Knex.Transaction, claimed: Row[]): Promise<void>;
  /** A limit shared by instances (places of a queue): checked under a gate row of its own. */
  gate?: ClaimGate<Row>;
}

/**
 * A limit over the claimed rows (`max_concurrency`, one run per concurrency key): its count is made under a lock
 * row (`table` keyed by `key`), taken skip-locked as well, so one instance at a time counts and claims, and an
 * instance that finds the gate held moves on (HELD) instead of queueing behind it. The count and the claim are in
 * the gate's one transaction: exact across instances.
 */
export interface ClaimGate<Row> {
  /** A table of lock rows: the key's columns and `claimed_at` (when the row was made), as `tkgate_run_queues`. */
  table: string;
  key: Record<string, string>;
  /**
   * Which rows to claim, read under the gate: FULL when no place is free; `candidates()` reads the due rows (locked).
   */
  choose(trx: Knex.Transaction, candidates: () => Promise<Row[]>): Promise<Row[] | typeof FULL>;
}

/** Gate rows made already, per database: a gate's row is made once, outside any claim (see `ensureGate`). */
const madeGates = new WeakMap<Database, Set<string>>();

/**
 * A gate's row, made before its first claim in a statement of its own: made inside the claim, an insert beside a
 * row another claim holds would wait for it on MariaDB (its duplicate-key check locks), the wait a gate avoids.
 */
async function ensureGate(db: Database, gate: ClaimGate<unknown>): Promise<void> {
  const name = `${gate.table}\0${JSON.stringify(gate.key)}`;
  let made = madeGates.get(db);
  if (!made) madeGates.set(db, (made = new Set()));
  if (made.has(name)) return;
  await db(gate.table)
    .insert({ ...gate.key, claimed_at: Date.now() })
    .onConflict(Object.keys(gate.key))
    .ignore();
  made.add(name);
}

/** Claims due rows (see Claim): the rows claimed here, FULL (the gate's places are taken) or HELD (another instance claims now). */
export async function claimDue<Row extends Record<string, unknown>>(db: Database, claim: Claim<Row>): Promise<Row[] | typeof FULL | typeof HELD> {
  const locks = dialectOf(db).claimLocks;
  if (claim.gate) await ensureGate(db, claim.gate);
  return writeTransaction(db, async (trx) => {
    await locks.begin(trx, claim.gate?.table ?? claim.table);
    const candidates = async () =>
      (await locks.skipLocked(
        claim
          .due(trx(claim.table))
          .orderBy([...claim.order])
          .limit(claim.candidates)
          .select([...claim.columns]),
      )) as Row[];
    let chosen: Row[] | typeof FULL;
    if (claim.gate) {
      const gate = await locks.skipLocked(trx(claim.gate.table).where(claim.gate.key)).first(Object.keys(claim.gate.key));
      if (!gate) return HELD;
      chosen = await claim.gate.choose(trx, candidates);
      if (chosen === FULL) return FULL;
    } else chosen = await candidates();
    if (chosen.length === 0) return chosen;
    const lease = claim.lease;
    if (!lease) {
      if (claim.also) await claim.also(trx, chosen);
      return chosen;
    }
    const ids = chosen.map((row) => row[claim.key] as string | number);
    // Conditional on being due still: on SQLite and under a gate nothing else moves them (the rows are locked, or
    // the write lock is ours), so every chosen row is claimed; fewer would mean a row left the due set, and only
    // rows whose lease is ours are answered.
    const changed = Number(await claim.due(trx(claim.table).whereIn(claim.key, ids)).update(lease));
    let claimed = chosen;
    if (changed !== ids.length) {
      const mine = new Set((await trx(claim.table).whereIn(claim.key, ids).where(lease).pluck(claim.key)).map(String));
      claimed = chosen.filter((row) => mine.has(String(row[claim.key])));
    }
    if (claim.also && claimed.length > 0) await claim.also(trx, claimed);
    return claimed;
  });
}
