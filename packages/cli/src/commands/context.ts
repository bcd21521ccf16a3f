import { loadServerConfig, migrateToLatest, openDatabase, type Database, type ServerConfig } from '@tkgate/core';
import type { OptionValues } from './command.js';

export function configFrom(values: OptionValues, overrides: Record<string, unknown> = {}): ServerConfig {
  return loadServerConfig({ file: values.config as string | undefined, overrides });
}

/** Opens the configured database, brings its schema up to date, runs `work`, and always closes it. */
export async function withDatabase<T>(values: OptionValues, work: (db: Database, config: ServerConfig) => Promise<T>): Promise<T> {
  const config = configFrom(values);
  const db = openDatabase(config.db);
  try {
    await migrateToLatest(db);
    return await work(db, config);
  } finally {
    await db.destroy();
  }
}

