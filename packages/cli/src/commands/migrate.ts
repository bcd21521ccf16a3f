import { migrateToLatest, openDatabase } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--config FILE]',
  summary: 'bring the database schema up to date',
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const db = openDatabase(configFrom(values).db);
    try {
      const applied = await migrateToLatest(db);
      process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
    } finally {
      await db.destroy();
    }
  },
};
