import type { Knex } from 'knex';

/**
 * `tkgate_readiness`: one row that /readyz writes (ops/database-probe.ts), so readiness notices a
 * database that answers reads but refuses writes (a full disk, a read-only server, rights withdrawn).
 * Its name starts with `tkgate_`, so no toolkit can read or write it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('tkgate_readiness', (table) => {
    table.integer('id').primary();
    table.bigInteger('checked_at').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('tkgate_readiness');
}
