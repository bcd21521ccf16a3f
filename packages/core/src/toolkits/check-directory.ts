import { statSync } from 'node:fs';
import { ConfigError, type ServerConfig } from '../config/server-config.js';
import { openDatabase } from '../db/connect.js';
import { openPreparedReads } from '../db/prepared-reads.js';
import { createLogger, type Logger } from '../log.js';
import { loadPlugins } from '../plugins/plugin-loader.js';
import { compileToolkitFile } from './compile-toolkit.js';
import type { ToolkitProblem } from './config-issues.js';
import { readDatabaseSchema } from './database-schema.js';
import { listToolkitFiles, ToolkitRegistry } from './toolkit-registry.js';

export interface DirectoryCheck {
  files: number;
  toolkits: string[];
  problems: ToolkitProblem[];
}

const silent = createLogger('error', () => undefined);

/** A toolkits.dir that does not exist (or is not a directory) stops the start rather than serving nothing. */
export function requireToolkitDirectory(dir: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    throw new ConfigError(`toolkits.dir ${dir} does not exist`);
  }
  if (!isDirectory) throw new ConfigError(`toolkits.dir ${dir} is not a directory`);
}

/**
 * `tkgate config check [DIR|FILE]`: loads a directory (or one file) exactly as `tkgate start` would (same
 * plugins, same live database schema) and reports every problem rather than the first.
 */
export async function checkToolkitDirectory(target: string, config: ServerConfig, log: Logger): Promise<DirectoryCheck> {
  const oneFile = statSync(target, { throwIfNoEntry: false })?.isFile() ?? false;
  if (!oneFile) requireToolkitDirectory(target);
  const db = openDatabase(config.db);
  // Connect first: on SQLite this creates the file, which the read-only connection beside it requires.
  await db.raw('select 1');
  const reads = openPreparedReads(db, config.db);
  try {
    const plugins = await loadPlugins(config.plugins, { db, reads, log, options: config.plugin_options });
    try {
      if (oneFile) {
        const result = await compileToolkitFile(target, { schema: await readDatabaseSchema(db), types: plugins.types });
        return 'toolkit' in result ? { files: 1, toolkits: [result.toolkit.name], problems: [] } : { files: 1, toolkits: [], problems: result.problems };
      }
      const { snapshot, problems } = await new ToolkitRegistry(target, db, plugins.types, silent).reload();
      return { files: (await listToolkitFiles(target)).length, toolkits: [...snapshot.keys()], problems };
    } finally {
      await plugins.close();
    }
  } finally {
    reads.close();
    await db.destroy();
  }
}
