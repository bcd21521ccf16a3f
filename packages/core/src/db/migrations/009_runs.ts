import type { Knex } from 'knex';

/**
 * Runs: endpoints that run as jobs (docs/runs.md).
 * - `runs`: one row per run, from its call to its end. `context` (the whole request context) is kept only while the
 *   run waits and erased when it starts; `payload` holds only the `audit_fields`. `queue` names the endpoint's queue
 *   (toolkit and path), `concurrency_key` the SHA-256 of the run's key value within it. `view_power` and
 *   `cancel_power` are the endpoint's when the run was asked for. Indexed for the claim (status, oldest first), the
 *   per-queue counts, the heartbeat sweep, the listing (newest first) and the retention purge.
 * - `run_output`: the run's output in chunks numbered 1, 2, ... per run (stdout or stderr, as text).
 * - `tkgate_run_queues`: lock rows, updated first in a transaction: per queue, one under which its running runs
 *   are counted and claimed, and one under which its waiting runs are counted
 *   and new ones recorded (run-store.ts), on every database.
 * - `tkgate_runs_purge`: when the next retention purge is due; the instance that moves it purges.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('runs', (table) => {
    table.string('id', 32).primary();
    table.string('toolkit', 64).notNullable();
    table.string('endpoint', 255).notNullable();
    table.string('method', 8).notNullable();
    table.string('queue', 64).notNullable();
    table.string('concurrency_key', 64).nullable();
    table.string('status', 24).notNullable();
    table.integer('user_id').nullable();
    table.string('username', 255).nullable();
    table.string('actor', 16).notNullable();
    table.string('request_id', 128).nullable();
    table.integer('view_power').notNullable();
    table.integer('cancel_power').notNullable();
    table.bigInteger('queued_at').notNullable();
    table.bigInteger('started_at').nullable();
    table.bigInteger('ended_at').nullable();
    table.bigInteger('heartbeat_at').nullable();
    table.string('instance', 64).nullable();
    table.bigInteger('cancel_requested_at').nullable();
    table.string('cancelled_by', 255).nullable();
    table.integer('exit_code').nullable();
    table.string('signal', 16).nullable();
    table.string('reason', 32).nullable();
    table.bigInteger('output_bytes').notNullable().defaultTo(0);
    table.boolean('output_truncated').notNullable().defaultTo(false);
    table.text('result', 'mediumtext').nullable();
    table.text('payload').nullable();
    table.text('context', 'mediumtext').nullable();
    table.index(['status', 'queued_at'], 'runs_status_queued');
    table.index(['queue', 'status'], 'runs_queue_status');
    table.index(['instance', 'status'], 'runs_instance_status');
    table.index(['queued_at'], 'runs_queued_at');
    table.index(['ended_at'], 'runs_ended_at');
  });
  await db.schema.createTable('run_output', (table) => {
    table.string('run_id', 32).notNullable();
    table.integer('seq').notNullable();
    table.string('stream', 8).notNullable();
    table.text('data', 'mediumtext').notNullable();
    table.primary(['run_id', 'seq']);
  });
  await db.schema.createTable('tkgate_run_queues', (table) => {
    table.string('queue', 64).primary();
    table.bigInteger('claimed_at').notNullable();
  });
  await db.schema.createTable('tkgate_runs_purge', (table) => {
    table.integer('id').primary();
    table.bigInteger('next_at').notNullable();
  });
  // Literal values: `migrate --dry-run` prints statements with their values, knex's log with placeholders.
  await db.raw('INSERT INTO tkgate_runs_purge (id, next_at) VALUES (1, 0)');
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['tkgate_runs_purge', 'tkgate_run_queues', 'run_output', 'runs']) await db.schema.dropTableIfExists(table);
}
