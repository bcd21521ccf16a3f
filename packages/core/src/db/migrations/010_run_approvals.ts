import type { Knex } from 'knex';

/**
 * Approvals: four eyes before a command runs (docs/runs.md, "Approvals").
 * - `runs` gains what binds and decides a run that needs approval: `definition_hash` (SHA-256 of the endpoint's
 *   definition when it was asked for: a run whose endpoint changed never starts), `expires_at`, and who may decide
 *   (`approve_power`, `approve_group`, `quorum`, `allow_self`, copied from the endpoint), and `dry_run` (JSON:
 *   status, exit code and masked output of the endpoint's dry run).
 * - `run_approvals`: one row per decision. `approver` is `u:<user id>` (or `cli` for an operator at the server):
 *   unique per run, so no approver counts twice, whichever instance records them.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (table) => {
    table.string('definition_hash', 64).nullable();
    table.bigInteger('expires_at').nullable();
    table.integer('approve_power').nullable();
    table.string('approve_group', 64).nullable();
    table.integer('quorum').nullable();
    table.boolean('allow_self').notNullable().defaultTo(false);
    table.text('dry_run', 'mediumtext').nullable();
  });
  await db.schema.createTable('run_approvals', (table) => {
    table.string('run_id', 32).notNullable();
    table.string('approver', 64).notNullable();
    table.integer('user_id').nullable();
    table.string('username', 255).notNullable();
    table.string('decision', 8).notNullable();
    table.string('comment', 1000).nullable();
    table.bigInteger('decided_at').notNullable();
    table.primary(['run_id', 'approver']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('run_approvals');
  await db.schema.alterTable('runs', (table) => {
    for (const column of ['definition_hash', 'expires_at', 'approve_power', 'approve_group', 'quorum', 'allow_self', 'dry_run']) table.dropColumn(column);
  });
}
