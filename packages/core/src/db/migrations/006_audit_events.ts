import type { Knex } from 'knex';

/**
 * The audit trail (docs/audit.md):
 * - `audit_events`: one row per recorded action (login, logout, a CLI change, an audited toolkit call...). A call's
 *   row is written before its endpoint runs and completed (status, code, duration, details) after it. Indexed for
 *   the filters of `tkgate audit` and GET {base}/admin/audit (user, toolkit, action, each with the time) and for
 *   the cursor, which pages by `id` (newest first); `at` alone for the retention purge.
 * - `tkgate_audit_purge`: one row, the time the next retention purge is due; the instance that moves it forward
 *   (a conditional UPDATE) purges, the others do not, so one instance purges at a time.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('audit_events', (table) => {
    table.bigIncrements('id').primary();
    // Epoch milliseconds, like the sessions' times.
    table.bigInteger('at').notNullable();
    table.string('request_id', 128).nullable();
    table.integer('actor_user_id').nullable();
    table.string('actor', 16).notNullable();
    table.string('credential', 64).nullable();
    table.string('client', 64).nullable();
    table.string('action', 32).notNullable();
    table.string('toolkit', 64).nullable();
    table.string('endpoint', 255).nullable();
    table.string('method', 8).nullable();
    table.integer('status').nullable();
    table.string('code', 64).nullable();
    table.integer('duration_ms').nullable();
    table.text('details').nullable();
    table.index(['at'], 'audit_events_at');
    table.index(['actor_user_id', 'id'], 'audit_events_user');
    table.index(['toolkit', 'id'], 'audit_events_toolkit');
    table.index(['action', 'id'], 'audit_events_action');
  });
  await db.schema.createTable('tkgate_audit_purge', (table) => {
    table.integer('id').primary();
    table.bigInteger('next_at').notNullable();
  });
  // Literal values: `migrate --dry-run` prints statements with their values, knex's log with placeholders.
  await db.raw('INSERT INTO tkgate_audit_purge (id, next_at) VALUES (1, 0)');
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('tkgate_audit_purge');
  await db.schema.dropTableIfExists('audit_events');
}
