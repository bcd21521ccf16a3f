import { addUser, migrateToLatest, type Database } from '@tkgate/core';
import { runCli } from './cli.js';
import type { DialectTarget } from './databases.js';
import { writeConfig } from './gateway-process.js';
import { tempDir, tkgateBin } from './paths.js';

/** Users made straight through @tkgate/core (the CLI has its own tests); the password is the name reversed. */
export const passwordOf = (username: string) => `${[...username].reverse().join('')}-pw`;

export async function addUsers(db: Database, users: Array<{ username: string; power?: number; group?: string }>): Promise<Record<string, number>> {
  const ids: Record<string, number> = {};
  for (const user of users) ids[user.username] = await addUser(db, { ...user, password: passwordOf(user.username) });
  return ids;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Brings a test database's schema up to date through @tkgate/core; with TKGATE_TEST_BIN (paths.ts), through
 * that build's own `tkgate migrate` instead, since a build refuses a schema with migrations it does not know.
 */
export async function migrateTestDatabase(db: Database, dbConfig: Record<string, unknown>): Promise<void> {
  if (!process.env.TKGATE_TEST_BIN) {
    await migrateToLatest(db);
    return;
  }
  const dir = tempDir();
  const result = await runCli(['migrate', '--config', writeConfig({ db: dbConfig }, dir)], { cwd: dir });
  if (result.code !== 0) throw new Error(`${tkgateBin} migrate exited ${result.code}: ${result.stderr}`);
}

/** A migrated, empty database of one dialect with a direct connection for fixtures and assertions. */
export interface Testbed {
  db: Database;
  dbConfig: Record<string, unknown>;
  close(): Promise<void>;
}

export async function createTestbed(dialect: DialectTarget): Promise<Testbed> {
  const target = await dialect.create();
  const db = target.open();
  await migrateTestDatabase(db, target.dbConfig);
  return {
    db,
    dbConfig: target.dbConfig,
    close: async () => {
      await db.destroy();
      await target.drop();
    },
  };
}
