import { migrateToLatest } from '@tkgate/core';
import type { Command } from './command.js';
import { withOpenDatabase } from './context.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--config FILE]',
  summary: 'bring the database schema up to date',
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const applied = await withOpenDatabase(values, (db) => migrateToLatest(db));
    process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
  },
};
