import type { Knex } from 'knex';

/**
 * Claims of runs (docs/runs.md, "Claims and wake-ups"): a queue's queued runs in the order a claim takes them, so
 * that its `FOR UPDATE SKIP LOCKED` reads and locks the oldest few by the index, not every queued run of the queue.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (table) => {
    table.index(['queue', 'status', 'queued_at', 'id'], 'runs_queue_claim_order');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (table) => {
    table.dropIndex(['queue', 'status', 'queued_at', 'id'], 'runs_queue_claim_order');
  });
}
