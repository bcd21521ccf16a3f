import type { Knex } from 'knex';

/**
 * Schedules: runs that start by the clock, exactly once (docs/schedules.md).
 * - `schedule_fires`: one row per schedule and fire time, its primary key `(schedule_id, fire_at)`: the instance
 *   whose INSERT succeeds fires (starts the run, or records why not), every other one meets the key and lets it
 *   be. `outcome` is `pending` from the insert until the fire's end (`started`, `skipped`, `missed`, `failed`);
 *   `run_id` the run it started, `reason` why it did not. Read newest first per schedule.
 * - `schedule_states`: one row per schedule id, from the first instance that saw it: `since` (fires before it are
 *   never made up) and whether it is paused (by whom, when), kept across restarts and reloads.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('schedule_fires', (table) => {
    table.string('schedule_id', 400).notNullable();
    table.bigInteger('fire_at').notNullable();
    table.string('outcome', 16).notNullable();
    table.string('run_id', 32).nullable();
    table.string('reason', 255).nullable();
    table.bigInteger('created_at').notNullable();
    table.primary(['schedule_id', 'fire_at']);
  });
  await db.schema.createTable('schedule_states', (table) => {
    table.string('schedule_id', 400).primary();
    table.bigInteger('since').notNullable();
    table.boolean('paused').notNullable().defaultTo(false);
    table.string('changed_by', 255).nullable();
    table.bigInteger('changed_at').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['schedule_states', 'schedule_fires']) await db.schema.dropTableIfExists(table);
}
