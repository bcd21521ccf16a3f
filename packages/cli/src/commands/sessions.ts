import { recordCliChange, revokeSessions, userIdOf } from '@tkgate/core';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

export const sessionsClear: Command = {
  name: 'sessions clear',
  usage: 'sessions clear NAME',
  summary: 'end every session of a user, also in a running gateway',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [username] }) {
    const cleared = await withDatabase(values, async (db) => {
      const userId = await userIdOf(db, username!);
      const cleared = await revokeSessions(db, userId);
      await recordCliChange(db, 'sessions_clear', { username, user_id: userId, cleared });
      return cleared;
    });
    process.stdout.write(`sessions of ${username} ended (${cleared} stored)\n`);
  },
};
