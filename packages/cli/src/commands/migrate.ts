import { migrateWithPlugins } from '@tkgate/core';
import type { Command } from './command.js';
import { withOpenDatabase } from './context.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--config FILE]',
  summary: "bring the database schema up to date, plugins' own tables included",
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const applied = await withOpenDatabase(values, (db, config) => migrateWithPlugins(db, config.plugins));
    process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
  },
};
