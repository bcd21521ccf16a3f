import type { Knex } from 'knex';
import type { Database } from './connect.js';
import * as initial from './migrations/001_initial.js';
import * as sharedAuthority from './migrations/002_shared_authority.js';
import * as oidc from './migrations/003_oidc.js';
import { importPlugins } from '../plugins/plugin-loader.js';
import { migratePlugins } from '../plugins/plugin-migrations.js';

/** Migrations are compiled in, not globbed from disk, so the installed binary carries them. */
const migrations: Record<string, Knex.Migration> = {
  '001_initial': initial,
  '002_shared_authority': sharedAuthority,
  '003_oidc': oidc,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

/** Brings the schema up to date; returns the names of the migrations it ran. */
export async function migrateToLatest(db: Database): Promise<string[]> {
  // Several gateways (or workers) start at once: only take knex's migration lock when there is work.
  const [, pending] = (await db.migrate.list({ migrationSource: source, tableName: 'tkgate_migrations' })) as [unknown[], unknown[]];
  if (pending.length === 0) return [];
  const [, applied] = (await db.migrate.latest({ migrationSource: source, tableName: 'tkgate_migrations' })) as [number, string[]];
  return applied;
}

/**
 * `tkgate migrate`: core's schema, then each configured plugin's own migrations (imported, not
 * registered). Returns what ran; plugins' as "<plugin>/<migration>".
 */
export async function migrateWithPlugins(db: Database, pluginSpecifiers: string[]): Promise<string[]> {
  const applied = await migrateToLatest(db);
  return [...applied, ...(await migratePlugins(db, await importPlugins(pluginSpecifiers)))];
}
