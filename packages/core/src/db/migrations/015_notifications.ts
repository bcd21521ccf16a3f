import type { Knex } from 'knex';

/**
 * Notifications: run events delivered to webhooks and Slack (docs/notifications.md).
 * - `notification_events`: the outbox. One row per event (`run.failed` of one run, ...), written in the same
 *   transaction as the state change that causes it; `body` is the event's JSON body as it was then, so every
 *   attempt and a redeliver send the same bytes' content (never a secret: the body holds no payload).
 * - `notification_deliveries`: one row per event and sink. `id` is the `webhook-id` of every attempt. A delivery is
 *   `pending` until a 2xx (`delivered`) or its last attempt (`failed`); `next_at` is when it is due, and
 *   `lease_until`/`leased_by` the claim of the instance delivering it now (db/claims.ts's claim takes it).
 *   `attempts` numbers every attempt; `round_attempts` and `round_at` count toward max_attempts and give_up_after
 *   since the event or its last redeliver.
 * - `notification_attempts`: every attempt, numbered per delivery, with its status code, error and duration.
 * - `notification_streaks`: per rule and endpoint, the failures in a row and whether this rule sent their
 *   `run.failed` (after_consecutive_failures, on_recovery), updated under the row's lock.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('notification_events', (table) => {
    table.string('id', 32).primary();
    table.string('type', 32).notNullable();
    table.string('run_id', 32).nullable();
    table.text('body', 'mediumtext').notNullable();
    table.bigInteger('created_at').notNullable();
  });
  await db.schema.createTable('notification_deliveries', (table) => {
    table.string('id', 40).primary();
    table.string('event_id', 32).notNullable();
    table.string('event', 32).notNullable();
    table.string('sink', 64).notNullable();
    table.string('status', 16).notNullable();
    table.integer('attempts').notNullable().defaultTo(0);
    table.integer('round_attempts').notNullable().defaultTo(0);
    table.bigInteger('created_at').notNullable();
    table.bigInteger('round_at').notNullable();
    table.bigInteger('next_at').notNullable();
    table.bigInteger('lease_until').nullable();
    table.string('leased_by', 64).nullable();
    table.bigInteger('ended_at').nullable();
    table.index(['status', 'next_at'], 'notification_deliveries_due');
    table.index(['created_at'], 'notification_deliveries_created');
  });
  await db.schema.createTable('notification_attempts', (table) => {
    table.string('delivery_id', 40).notNullable();
    table.integer('attempt').notNullable();
    table.bigInteger('at').notNullable();
    table.integer('status_code').nullable();
    table.string('error', 500).nullable();
    table.integer('duration_ms').notNullable();
    table.primary(['delivery_id', 'attempt']);
  });
  await db.schema.createTable('notification_streaks', (table) => {
    table.string('rule', 64).primary();
    table.integer('failures').notNullable().defaultTo(0);
    table.boolean('failed_sent').notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['notification_streaks', 'notification_attempts', 'notification_deliveries', 'notification_events'])
    await db.schema.dropTableIfExists(table);
}
