import type { Database } from '@tkgate/core';

/** The toolkit tables the pipeline tests use, created like an operator would. */
export async function createToolkitTables(db: Database): Promise<void> {
  await db.schema.createTable('profiles', (table) => {
    table.increments('id').primary();
    table.integer('user_id').notNullable();
    table.string('email', 200).notNullable();
    table.string('city', 100).nullable();
  });
  await db.schema.createTable('orders', (table) => {
    table.increments('id').primary();
    table.integer('user_id').notNullable();
    table.integer('total').notNullable();
    table.string('status', 50).notNullable();
  });
  await db.schema.createTable('items', (table) => {
    table.increments('id').primary();
    table.integer('owner_id').notNullable();
    table.string('title', 200).notNullable().unique();
    table.string('status', 20).notNullable().defaultTo('open');
  });
}
