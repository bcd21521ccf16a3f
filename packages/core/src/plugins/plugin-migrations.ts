import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Database } from '../db/connect.js';
import { CORE_TABLES, readDatabaseSchema } from '../db/database-schema.js';
import {
  CORE_MIGRATIONS,
  migrateToLatest,
  migrationStates,
  plannedMigrations,
  TOLERATE_NEWER_MIGRATIONS,
  type MigrationSet,
  type MigrationState,
  type PlannedMigration,
} from '../db/migrate.js';
import { importPlugins, PluginError, type ImportedPlugin } from './plugin-loader.js';

/**
 * Where a plugin's applied migrations are recorded: a knex migrations table of its own, named after the
 * plugin (readable, then a hash so two names never share one), within MySQL's 64 characters.
 */
export function pluginMigrationsTable(plugin: string): string {
  const readable = plugin
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 24);
  const hash = createHash('sha256').update(plugin).digest('hex').slice(0, 8);
  return `tkgate_plugin_${readable}_${hash}`;
}

/** tkgate's own tables and their columns, to see that a plugin's migration left them alone. */
async function coreShape(db: Database): Promise<string> {
  const schema = await readDatabaseSchema(db);
  return [...CORE_TABLES].map((table) => `${table}(${schema.columnsOf(table).sort().join(',')})`).join(' ');
}

/**
 * Runs each plugin's pending migrations, in load order, each plugin recorded in its own table. Returns
 * what ran as "<plugin>/<migration>". A plugin whose migration changed tkgate's tables stops the run.
 */
export async function migratePlugins(db: Database, plugins: ImportedPlugin[]): Promise<string[]> {
  const applied: string[] = [];
  for (const { plugin } of plugins) {
    const migrations = plugin.migrations;
    if (!migrations || Object.keys(migrations).length === 0) continue;
    const source: Knex.MigrationSource<string> = {
      getMigrations: async () => Object.keys(migrations).sort(),
      getMigrationName: (name) => name,
      getMigration: async (name) => ({ up: (knex) => migrations[name]!.up(knex), down: (knex) => migrations[name]!.down?.(knex) ?? Promise.resolve() }),
    };
    const before = await coreShape(db);
    let ran: string[];
    try {
      const config = { migrationSource: source, tableName: pluginMigrationsTable(plugin.name), ...TOLERATE_NEWER_MIGRATIONS };
      [, ran] = (await db.migrate.latest(config)) as [number, string[]];
    } catch (err) {
      throw new PluginError(`plugin ${plugin.name}: migration failed: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    if ((await coreShape(db)) !== before) {
      throw new PluginError(
        `plugin ${plugin.name}: its migrations changed tkgate's own tables (${ran.join(', ')}); a plugin may only create and change its own`,
      );
    }
    applied.push(...ran.map((name) => `${plugin.name}/${name}`));
  }
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

/** Core's migrations, then those of each configured plugin that has any (db/migrate.ts reads and plans them). */
async function migrationSets(pluginSpecifiers: string[]): Promise<MigrationSet[]> {
  const sets: MigrationSet[] = [CORE_MIGRATIONS];
  for (const { plugin } of await importPlugins(pluginSpecifiers)) {
    if (plugin.migrations && Object.keys(plugin.migrations).length > 0) {
      sets.push({ owner: plugin.name, table: pluginMigrationsTable(plugin.name), migrations: plugin.migrations as MigrationSet['migrations'] });
    }
  }
  return sets;
}

/** `tkgate migrate --status`: every migration of core and the configured plugins, and whether it ran. Changes nothing. */
export async function migrationStatus(db: Database, pluginSpecifiers: string[]): Promise<MigrationState[]> {
  return migrationStates(db, await migrationSets(pluginSpecifiers));
}

/** `tkgate migrate --dry-run`: the statements of core's and the configured plugins' pending migrations (db/migrate.ts). */
export async function migrationPlan(db: Database, pluginSpecifiers: string[]): Promise<PlannedMigration[]> {
  return plannedMigrations(db, await migrationSets(pluginSpecifiers));
}
