import type { ServerConfig } from '../config/server-config.js';
import { openDatabase, type Database } from '../db/connect.js';
import { openPreparedReads } from '../db/prepared-reads.js';
import { createLogger, type Logger } from '../log.js';
import type { EndpointTypes } from '../plugins/endpoint-types.js';
import { loadPlugins } from '../plugins/plugin-loader.js';
import type { ToolkitProblem } from './config-issues.js';
import { ToolkitRegistry, type ToolkitSnapshot } from './toolkit-registry.js';

export interface DirectoryCheck {
  files: number;
  toolkits: string[];
  problems: ToolkitProblem[];
  /** The toolkits that loaded. */
  snapshot: ToolkitSnapshot;
}

const silent = createLogger('error', () => undefined);

/** The check prints every problem itself; its log gets only what a problem line leaves out: a plugin's failure. */
const onlyPluginFailures = (log: Logger): Logger => ({ ...silent, error: (msg, fields) => msg === 'plugin check threw' && log.error(msg, fields) });

/**
 * The configured plugins, loaded on the configured database as `tkgate start` would, for the CLI's
 * offline commands (config check, openapi, schema); everything is closed when `work` ends.
 */
export async function withLoadedPlugins<T>(config: ServerConfig, log: Logger, work: (types: EndpointTypes, db: Database) => Promise<T>): Promise<T> {
  const db = openDatabase(config.db);
  try {
    // Connect first: on SQLite this creates the file, which the read-only connection beside it requires.
    await db.raw('select 1');
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const reads = openPreparedReads(db, config.db);
  try {
    // Plugins' onClose hooks run on every way out, also when a later plugin fails to load.
    const plugins = await loadPlugins(config.plugins, { db, reads, log, options: config.plugin_options });
    try {
      return await work(plugins.types, db);
    } finally {
      await plugins.close();
    }
  } finally {
    reads.close();
    await db.destroy();
  }
}

/**
 * `tkgate config check`: loads a directory exactly as `tkgate start` would (same plugins, same live
 * database schema) and reports every problem rather than the first.
 */
export function checkToolkitDirectory(dir: string, config: ServerConfig, log: Logger): Promise<DirectoryCheck> {
  return withLoadedPlugins(config, log, async (types, db) => {
    const registry = new ToolkitRegistry(dir, db, types, onlyPluginFailures(log), { maxFileBytes: config.toolkits.max_file_bytes });
    const listing = await registry.look();
    const { snapshot, problems } = await registry.load();
    return { files: listing.files.size, toolkits: [...snapshot.keys()], problems, snapshot };
  });
}
