import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { Logger } from '../log.js';
import { noMetrics, type PluginMetrics } from '../ops/metrics.js';
import { formatPath, validateStandard } from '../toolkits/config-issues.js';
import { EndpointTypes } from './endpoint-types.js';
import { PLUGIN_API_VERSION, type EndpointType, type PluginApi, type TkgatePlugin } from './plugin-api.js';

export class PluginError extends Error {
  override name = 'PluginError';
}

export interface LoadedPlugins {
  types: EndpointTypes;
  /** Runs every plugin's onClose cleanup, in reverse load order. */
  close(): Promise<void>;
}

/** A path (./x, ../x, /x) is resolved against the working directory; a name from there, then from tkgate's own install. */
async function importPlugin(specifier: string, cwd: string): Promise<unknown> {
  if (specifier.startsWith('.') || path.isAbsolute(specifier)) return import(pathToFileURL(path.resolve(cwd, specifier)).href);
  let resolved: string;
  try {
    resolved = createRequire(path.join(cwd, 'package.json')).resolve(specifier);
  } catch {
    return import(specifier);
  }
  return import(pathToFileURL(resolved).href);
}

function asPlugin(module: unknown, specifier: string): TkgatePlugin {
  const exported = (module as { default?: unknown; plugin?: unknown }).default ?? (module as { plugin?: unknown }).plugin;
  const plugin = exported as Partial<TkgatePlugin> | undefined;
  if (!plugin || typeof plugin !== 'object' || typeof plugin.name !== 'string' || typeof plugin.register !== 'function' || typeof plugin.apiVersion !== 'number') {
    throw new PluginError(`plugin ${specifier} is malformed: its default export must be { name, apiVersion, register(api) }`);
  }
  if (plugin.apiVersion !== PLUGIN_API_VERSION) {
    throw new PluginError(`plugin ${specifier} (${plugin.name}) was written for plugin API ${plugin.apiVersion}; this tkgate has plugin API ${PLUGIN_API_VERSION}`);
  }
  return plugin as TkgatePlugin;
}

/** Loads the configured plugins in order and lets each register its endpoint types and functions. */
export interface PluginDeps {
  db: Database;
  reads: PreparedReads;
  log: Logger;
  /** plugin_options of the server configuration, keyed by plugin name. */
  options?: Record<string, Record<string, unknown>>;
  cwd?: string;
  /** Where plugins' metrics go; none are kept when absent (config check). */
  metrics?: PluginMetrics;
}

export async function loadPlugins(specifiers: string[], deps: PluginDeps): Promise<LoadedPlugins> {
  const types = new EndpointTypes();
  const names: string[] = [];
  const cleanups: Array<() => void | Promise<void>> = [];
  for (const specifier of specifiers) {
    let module: unknown;
    try {
      module = await importPlugin(specifier, deps.cwd ?? process.cwd());
    } catch (err) {
      throw new PluginError(`plugin ${specifier} cannot be loaded: ${(err as Error).message.split('\n')[0]}`);
    }
    const plugin = asPlugin(module, specifier);
    const api: PluginApi = {
      apiVersion: PLUGIN_API_VERSION,
      log: deps.log,
      db: deps.db,
      options: deps.options?.[plugin.name] ?? {},
      readOptions: async (schema) => {
        const result = await validateStandard(schema, deps.options?.[plugin.name] ?? {}, ['plugin_options', plugin.name]);
        if ('value' in result) return result.value;
        throw new Error(result.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`).join('; '));
      },
      prepareRead: (build) => deps.reads.prepare(build),
      registerEndpointType: (type) => types.addType(type as unknown as EndpointType<unknown>, plugin.name),
      registerFunction: (name, fn) => types.addFunction(name, fn, plugin.name),
      getFunction: (name) => types.fn(name),
      metrics: deps.metrics ?? noMetrics,
      onClose: (cleanup) => cleanups.push(cleanup),
    };
    try {
      await plugin.register(api);
    } catch (err) {
      throw new PluginError(`plugin ${specifier} failed to register: ${(err as Error).message}`);
    }
    deps.log.info('plugin loaded', { plugin: plugin.name, from: specifier });
    names.push(plugin.name);
  }
  for (const name of Object.keys(deps.options ?? {})) {
    if (!names.includes(name)) throw new PluginError(`plugin_options.${name}: no loaded plugin is named ${name} (loaded: ${names.join(', ')})`);
  }
  return {
    types,
    close: async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    },
  };
}
