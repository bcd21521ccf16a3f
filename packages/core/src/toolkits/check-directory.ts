import type { ServerConfig } from '../config/server-config.js';
import { openDatabase } from '../db/connect.js';
import { openPreparedReads } from '../db/prepared-reads.js';
import { createLogger, type Logger } from '../log.js';
import { loadPlugins } from '../plugins/plugin-loader.js';
import type { ToolkitProblem } from './config-issues.js';
import { ToolkitRegistry } from './toolkit-registry.js';

export interface DirectoryCheck {
  files: number;
  toolkits: string[];
  problems: ToolkitProblem[];
}

const silent = createLogger('error', () => undefined);

/**
 * `tkgate config check`: loads a directory exactly as `tkgate start` would (same plugins, same live
 * database schema) and reports every problem rather than the first.
 */
export async function checkToolkitDirectory(dir: string, config: ServerConfig, log: Logger): Promise<DirectoryCheck> {
  const db = openDatabase(config.db);
  // Connect first: on SQLite this creates the file, which the read-only connection beside it requires.
  await db.raw('select 1');
  const reads = openPreparedReads(db, config.db);
  try {
    const plugins = await loadPlugins(config.plugins, { db, reads, log, options: config.plugin_options });
    try {
      const registry = new ToolkitRegistry(dir, db, plugins.types, silent, { maxFileBytes: config.toolkits.max_file_bytes });
      const listing = await registry.look();
      const { snapshot, problems } = await registry.load();
      return { files: listing.files.size, toolkits: [...snapshot.keys()], problems };
    } finally {
      await plugins.close();
    }
  } finally {
    reads.close();
    await db.destroy();
  }
}
