// Creates the table of the example toolkit (config/toolkits/notes.yaml) in the configured database,
// if it is missing. `npm start` runs it; toolkits' own tables are otherwise the operator's to create.
import { loadServerConfig, migrateToLatest, openDatabase } from '@tkgate/core';

const config = loadServerConfig({ file: process.argv[2] });
const db = openDatabase(config.db);
try {
  await migrateToLatest(db);
  if (!(await db.schema.hasTable('notes'))) {
    await db.schema.createTable('notes', (table) => {
      table.increments('id').primary();
      table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
      table.string('title', 120).notNullable();
      table.text('body').notNullable();
      table.string('status', 16).notNullable().defaultTo('open');
      table.timestamp('created_at').notNullable().defaultTo(db.fn.now());
      table.index(['user_id', 'status']);
    });
    process.stdout.write('created the example table notes\n');
  }
} finally {
  await db.destroy();
}
