import type { Knex } from 'knex';

/**
 * `tkgate_rate_limits`: one row per rate-limit budget (docs/rate-limits.md), keyed by the SHA-256 of its
 * policy name, `per` and the caller's key (no user ids or addresses in clear), holding the calls counted
 * in the budget's current window, which ends at `window_end` (ms since the epoch). Every gateway on the
 * database counts here, one upsert per call (rate-limits/database-counters.ts). Its name starts with
 * `tkgate_`, so no toolkit can read or write it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('tkgate_rate_limits', (table) => {
    table.specificType('key_hash', 'char(64)').primary();
    table.bigInteger('window_end').notNullable().index();
    table.integer('hits').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('tkgate_rate_limits');
}
