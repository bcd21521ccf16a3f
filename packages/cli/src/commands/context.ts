import { keepSqliteOwner, loadServerConfig, migrateToLatest, openDatabase, type Database, type ServerConfig } from '@tkgate/core';
import type { OptionValues } from './command.js';

export function configFrom(values: OptionValues, overrides: Record<string, unknown> = {}): ServerConfig {
  return loadServerConfig({ file: values.config as string | undefined, overrides });
}

/**
 * Opens the configured database as it is, runs `work`, and always closes it. Run as root on the service's
 * SQLite file, what the command created is given back to the file's owner (db/sqlite-owner.ts).
 */
export async function withOpenDatabase<T>(values: OptionValues, work: (db: Database, config: ServerConfig) => Promise<T>): Promise<T> {
  const config = configFrom(values);
  const restoreOwner = keepSqliteOwner(config.db);
  const db = openDatabase(config.db);
  try {
    return await work(db, config);
  } finally {
    await db.destroy();
    restoreOwner();
  }
}

/** Opens the configured database, brings its schema up to date, runs `work`, and always closes it. */
export function withDatabase<T>(values: OptionValues, work: (db: Database, config: ServerConfig) => Promise<T>): Promise<T> {
  return withOpenDatabase(values, async (db, config) => {
    await migrateToLatest(db);
    return work(db, config);
  });
}
