import { migrateWithPlugins, migrationPlan, migrationStatus } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { withOpenDatabase } from './context.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--status | --dry-run] [--config FILE]',
  summary: "bring the database schema up to date, plugins' own tables included (--status lists, --dry-run prints the SQL; neither changes anything)",
  options: { status: { type: 'boolean' }, 'dry-run': { type: 'boolean' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    if (values.status && values['dry-run']) throw new UsageError('--status and --dry-run exclude each other');
    if (values.status) {
      const states = await withOpenDatabase(values, (db, config) => migrationStatus(db, config.plugins));
      // "recorded-only": the record names a migration this version does not have (a newer tkgate ran it).
      for (const { name, state } of states) process.stdout.write(`${state.padEnd(13)} ${name}\n`);
      const pending = states.filter((entry) => entry.state === 'pending').length;
      process.stdout.write(pending > 0 ? `${pending} pending: \`tkgate migrate\` (or the next start) applies them\n` : 'up to date\n');
      return;
    }
    if (values['dry-run']) {
      const plan = await withOpenDatabase(values, (db, config) => migrationPlan(db, config.plugins));
      if (plan.length === 0) process.stdout.write('-- already up to date: nothing would run\n');
      for (const { name, statements } of plan) {
        process.stdout.write(`-- ${name}\n${statements.map((sql) => `${sql};\n`).join('')}`);
      }
      return;
    }
    const applied = await withOpenDatabase(values, (db, config) => migrateWithPlugins(db, config.plugins));
    process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
  },
};
