import { fleetSettingsOf } from '../config/fleet-settings.js';
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type ServerConfig } from '../config/server-config.js';
import { openDatabase, type Database } from '../db/connect.js';
import { openPreparedReads } from '../db/prepared-reads.js';
import { createLogger, type Logger } from '../log.js';
import type { EndpointTypes } from '../plugins/endpoint-types.js';
import type { ConfigIssue } from '../plugins/plugin-api.js';
import { loadPlugins } from '../plugins/plugin-loader.js';
import { patternCache } from './client-filter.js';
import { compileToolkitText } from './compile-toolkit.js';
import { formatPath } from '../config/schema-issues.js';
import type { ToolkitProblem } from './config-issues.js';
import { readDatabaseSchema } from '../db/database-schema.js';
import { ToolkitRegistry, type ToolkitSnapshot } from './toolkit-registry.js';

export interface DirectoryCheck {
  files: number;
  toolkits: string[];
  problems: ToolkitProblem[];
  /** What the loaded endpoints' types advise (EndpointType.warn): never a refusal. */
  warnings: ToolkitProblem[];
  /** The toolkits that loaded. */
  snapshot: ToolkitSnapshot;
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
    const plugins = await loadPlugins(config.plugins, { db, reads, log, options: config.plugin_options, fleet: fleetSettingsOf(config) });
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

/** Each loaded endpoint's warnings, from its type's `warn` (a `warn` that throws is skipped: it refuses nothing). */
function endpointWarnings(snapshot: ToolkitSnapshot, serverMaxBodyBytes: number): ToolkitProblem[] {
  const warnings: ToolkitProblem[] = [];
  for (const toolkit of snapshot.values()) {
    const endpoints = new Set([...toolkit.routes.values()].flatMap((byMethod) => [...byMethod.values()]));
    for (const endpoint of endpoints) {
      const takesBody = endpoint.methods.some((method) => method !== 'GET');
      const maxBodyBytes = takesBody ? (endpoint.clientFilter.maxBodyBytes ?? serverMaxBodyBytes) : 0;
      let issues: ConfigIssue[] = [];
      try {
        issues = endpoint.type.warn?.(endpoint.typeConfig, { maxBodyBytes }) ?? [];
      } catch {
        continue;
      }
      for (const issue of issues)
        warnings.push({ file: path.basename(toolkit.file), path: formatPath(['endpoint', endpoint.path, ...issue.path]), message: issue.message });
    }
  }
  return warnings;
}

/**
 * `tkgate config check [DIR|FILE]`: loads a directory (or one file) exactly as `tkgate start` would (same
 * plugins, same live database schema) and reports every problem rather than the first, and the warnings
 * of what loaded.
 */
/** The names of the configured notification sinks. */
export const sinkNames = (config: ServerConfig): ReadonlySet<string> => new Set(config.notifications.sinks.map((sink) => sink.name));

export async function checkToolkitDirectory(target: string, config: ServerConfig, log: Logger): Promise<DirectoryCheck> {
  const check = await loadForCheck(target, config, log);
  return { ...check, warnings: endpointWarnings(check.snapshot, config.server.max_body_bytes) };
}

function loadForCheck(target: string, config: ServerConfig, log: Logger): Promise<Omit<DirectoryCheck, 'warnings'>> {
  const oneFile = statSync(target, { throwIfNoEntry: false })?.isFile() ?? false;
  if (!oneFile) requireToolkitDirectory(target);
  return withLoadedPlugins(config, log, async (types, db) => {
    if (oneFile) {
      const result = await compileToolkitText(target, await readFile(target, 'utf8'), {
        schema: await readDatabaseSchema(db),
        types,
        compilePattern: patternCache(),
        sinks: sinkNames(config),
      });
      if (!('toolkit' in result)) return { files: 1, toolkits: [], problems: result.problems, snapshot: new Map() };
      return { files: 1, toolkits: [result.toolkit.name], problems: [], snapshot: new Map([[result.toolkit.name, result.toolkit]]) };
    }
    const registry = new ToolkitRegistry(target, db, types, onlyPluginFailures(log), {
      maxFileBytes: config.toolkits.max_file_bytes,
      sinks: sinkNames(config),
    });
    const listing = await registry.look();
    const { snapshot, problems } = await registry.load();
    return { files: listing.files.size, toolkits: [...snapshot.keys()], problems, snapshot };
  });
}

/**
 * The toolkits of `toolkits.dir` as `tkgate start` would load them (same plugins, same database schema), for a CLI
 * command that must know the live endpoints: `tkgate runs approve|reject` checks the definition an approval binds.
 * Problems of single files leave those toolkits out, as at a start.
 */
export function withLoadedToolkits<T>(config: ServerConfig, log: Logger, work: (snapshot: ToolkitSnapshot, db: Database) => Promise<T>): Promise<T> {
  requireToolkitDirectory(config.toolkits.dir);
  return withLoadedPlugins(config, log, async (types, db) => {
    const registry = new ToolkitRegistry(config.toolkits.dir, db, types, onlyPluginFailures(log), { maxFileBytes: config.toolkits.max_file_bytes });
    await registry.look();
    return work((await registry.load()).snapshot, db);
  });
}
