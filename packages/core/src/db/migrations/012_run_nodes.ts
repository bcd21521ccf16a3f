import type { Knex } from 'knex';

/**
 * Runs with nodes: one command on many hosts as one run (docs/fleet.md).
 * - `run_nodes`: one row per node of a run, created with the run (its selection is fixed then) and updated at each of
 *   the node's changes; `position` is the order the nodes run in. Paged by run, status and name (keyset paging on
 *   the name: a page of a 10,000-node run reads one index range), counted by run and status.
 * - `runs` gains `node_count` (null for a run without nodes), `rerun_of` (the run a rerun repeats) and `replay` (a
 *   run with nodes keeps its filtered payload and its call's path until retention, for a rerun; never the context).
 * - `run_output` gains `node`: the node a chunk (or a `node` event, stream `node`) belongs to; null for a run without.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('run_nodes', (table) => {
    table.string('run_id', 32).notNullable();
    table.string('name', 255).notNullable();
    table.integer('position').notNullable();
    table.string('status', 16).notNullable();
    table.integer('exit_code').nullable();
    table.string('signal', 16).nullable();
    table.string('reason', 32).nullable();
    table.bigInteger('started_at').nullable();
    table.bigInteger('ended_at').nullable();
    table.bigInteger('output_bytes').notNullable().defaultTo(0);
    table.boolean('output_truncated').notNullable().defaultTo(false);
    table.primary(['run_id', 'name']);
    table.index(['run_id', 'status', 'name'], 'run_nodes_run_status_name');
  });
  await db.schema.alterTable('runs', (table) => {
    table.integer('node_count').nullable();
    table.string('rerun_of', 32).nullable();
    table.text('replay', 'mediumtext').nullable();
  });
  await db.schema.alterTable('run_output', (table) => {
    table.string('node', 255).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('run_output', (table) => table.dropColumn('node'));
  await db.schema.alterTable('runs', (table) => {
    for (const column of ['node_count', 'rerun_of', 'replay']) table.dropColumn(column);
  });
  await db.schema.dropTableIfExists('run_nodes');
}
