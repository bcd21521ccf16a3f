import type { Knex } from 'knex';

/**
 * Signed triggers (docs/triggers.md):
 * - `trigger_deliveries`: one row per endpoint and provider delivery id, kept 24 h, so a redelivery starts nothing
 *   twice whichever instance it reaches. `delivery_key` is the SHA-256 (hex) of toolkit, endpoint and delivery id
 *   (the id is the provider's text, of any length); `status` is null while the first delivery is being answered,
 *   then its status, with its JSON `body` and `location` (a run's), which a redelivery is answered with.
 * - `runs.actor_details`: JSON details of a run's actor beyond its user and kind (a trigger's scheme and delivery id).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('trigger_deliveries', (table) => {
    table.string('delivery_key', 64).primary();
    table.string('toolkit', 64).notNullable();
    table.string('endpoint', 255).notNullable();
    table.string('delivery_id', 255).notNullable();
    table.integer('status').nullable();
    table.text('body', 'mediumtext').nullable();
    table.string('location', 1000).nullable();
    table.bigInteger('created_at').notNullable();
    table.index(['created_at'], 'trigger_deliveries_created_at');
  });
  await db.schema.alterTable('runs', (table) => {
    table.text('actor_details').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (table) => table.dropColumn('actor_details'));
  await db.schema.dropTableIfExists('trigger_deliveries');
}
