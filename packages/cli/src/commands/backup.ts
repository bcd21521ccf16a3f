import { backupSqlite } from '@tkgate/core';
import type { Command } from './command.js';
import { withOpenDatabase } from './context.js';

export const backup: Command = {
  name: 'backup',
  usage: 'backup FILE [--config FILE]',
  summary: 'copy the SQLite database to FILE while gateways keep serving (SQLite online backup; FILE must not exist)',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [destination] }) {
    const written = await withOpenDatabase(values, (db) => backupSqlite(db, destination!));
    process.stdout.write(`backup written: ${written}\n`);
  },
};
