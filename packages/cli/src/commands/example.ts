import type { Database } from '@tkgate/core';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

/** The table of the example toolkit (config/toolkits/notes.yaml); toolkits' own tables are otherwise the operator's. */
async function createNotesTable(db: Database): Promise<boolean> {
  if (await db.schema.hasTable('notes')) return false;
  await db.schema.createTable('notes', (table) => {
    table.increments('id').primary();
    table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    table.string('title', 120).notNullable();
    table.text('body').notNullable();
    table.string('status', 16).notNullable().defaultTo('open');
    table.timestamp('created_at').notNullable().defaultTo(db.fn.now());
    table.index(['user_id', 'status']);
  });
  return true;
}

export const exampleSetup: Command = {
  name: 'example setup',
  usage: 'example setup [--config FILE]',
  summary: "create the example toolkit's table (notes) in the configured database, SQLite or MySQL/MariaDB",
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const created = await withDatabase(values, (db) => createNotesTable(db));
    process.stdout.write(created ? 'created the example table notes\n' : 'the example table notes already exists\n');
  },
};
