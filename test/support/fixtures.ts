import { addUser, migrateToLatest, type Database } from '@tkgate/core';
import type { DialectTarget } from './databases.js';

/** Users made straight through @tkgate/core (the CLI has its own tests); the password is the name reversed. */
export const passwordOf = (username: string) => `${[...username].reverse().join('')}-pw`;

export async function addUsers(db: Database, users: Array<{ username: string; power?: number; group?: string }>): Promise<Record<string, number>> {
  const ids: Record<string, number> = {};
  for (const user of users) ids[user.username] = await addUser(db, { ...user, password: passwordOf(user.username) });
  return ids;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A migrated, empty database of one dialect with a direct connection for fixtures and assertions. */
export interface Testbed {
  db: Database;
  dbConfig: Record<string, unknown>;
  close(): Promise<void>;
}

export async function createTestbed(dialect: DialectTarget): Promise<Testbed> {
  const target = await dialect.create();
  const db = target.open();
  await migrateToLatest(db);
  return {
    db,
    dbConfig: target.dbConfig,
    close: async () => {
      await db.destroy();
      await target.drop();
    },
  };
}
