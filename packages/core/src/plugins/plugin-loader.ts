import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import { scopedLogger, type Logger } from '../log.js';
import { formatPath, validateStandard } from '../config/schema-issues.js';
import { checkApiRange, describeRange, PLUGIN_API_STRING } from './api-version.js';
import { EndpointTypes } from './endpoint-types.js';
import type { EndpointType, FleetSettings, PluginApi, PluginMetrics, PluginRoute, TkgatePlugin } from './plugin-api.js';
import { PluginMiddlewareSet } from './plugin-middleware.js';
import type { Secrets } from '../secrets/secrets.js';

/** Where a plugin's gauges go when the gateway keeps no metrics (config check). */
const noPluginMetrics: PluginMetrics = { gauge: () => undefined, counter: () => () => () => undefined, labelledGauge: () => undefined };

export class PluginError extends Error {
  override name = 'PluginError';
}

/** A plugin module, imported and checked, not yet registered. */
export interface ImportedPlugin {
  specifier: string;
  plugin: TkgatePlugin;
}

export interface LoadedPlugins {
  types: EndpointTypes;
  /** The middleware plugins put into the request path (useMiddleware), by point. */
  middleware: PluginMiddlewareSet;
  /** The routes plugins added (registerRoute), served under {base} by plugin-routes.ts. */
  routes: ReadonlyArray<PluginRoute & { plugin: string }>;
  /** Runs every plugin's onClose cleanup, in reverse load order. */
  close(): Promise<void>;
}

/** A path (./x, ../x, /x) is resolved against the working directory; a name from there, then from tkgate's own install. */
async function importModule(specifier: string, cwd: string): Promise<unknown> {
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
  if (!plugin || typeof plugin !== 'object' || typeof plugin.name !== 'string' || typeof plugin.register !== 'function' || plugin.apiVersion === undefined) {
    throw new PluginError(`plugin ${specifier} is malformed: its default export must be { name, apiVersion, register(api) }`);
  }
  const verdict = checkApiRange(plugin.apiVersion);
  if (verdict === 'unreadable') {
    throw new PluginError(
      `plugin ${specifier} (${plugin.name}): apiVersion ${JSON.stringify(plugin.apiVersion)} is not a range such as '^1.1' or { major: 1, minor: 1 }`,
    );
  }
  if (verdict === 'incompatible') {
    throw new PluginError(
      `plugin ${specifier} (${plugin.name}) needs plugin API ${describeRange(plugin.apiVersion)}; this tkgate has plugin API ${PLUGIN_API_STRING}`,
    );
  }
  if (plugin.migrations !== undefined && (typeof plugin.migrations !== 'object' || plugin.migrations === null)) {
    throw new PluginError(`plugin ${specifier} (${plugin.name}): migrations must be an object of { up, down } by name`);
  }
  return plugin as TkgatePlugin;
}

/** Imports the configured plugins in order and checks their shape and API range; registers nothing. */
export async function importPlugins(specifiers: string[], cwd = process.cwd()): Promise<ImportedPlugin[]> {
  const imported: ImportedPlugin[] = [];
  for (const specifier of specifiers) {
    let module: unknown;
    try {
      module = await importModule(specifier, cwd);
    } catch (err) {
      throw new PluginError(`plugin ${specifier} cannot be loaded: ${(err as Error).message.split('\n')[0]}`);
    }
    imported.push({ specifier, plugin: asPlugin(module, specifier) });
  }
  return imported;
}

export interface PluginDeps {
  db: Database;
  reads: PreparedReads;
  log: Logger;
  /** plugin_options of the server configuration, keyed by plugin name. */
  options?: Record<string, Record<string, unknown>>;
  /** Where plugins' metrics go; none are kept when absent (config check). */
  metrics?: PluginMetrics;
  /** The gateway's secrets (its logger masks their values); a store of their own when absent. */
  secrets?: Secrets;
  /** The server configuration's fleet section (PluginApi.fleet); none when absent. */
  fleet?: FleetSettings;
}

const NO_FLEET: FleetSettings = Object.freeze({ inventory: [], viewPower: 100 });
/** A plugin route's path: fixed segments of a path's characters. */
const ROUTE_PATH = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)*$/;

/**
 * Lets each plugin register, in order. When any step fails, the onClose hooks of the plugins already
 * registered run before the error goes on: a socket one of them opened must not keep the process alive.
 */
export async function registerPlugins(imported: ImportedPlugin[], deps: PluginDeps): Promise<LoadedPlugins> {
  const types = new EndpointTypes(deps.secrets);
  const middleware = new PluginMiddlewareSet(deps.log);
  const routes: Array<PluginRoute & { plugin: string }> = [];
  const cleanups: Array<{ plugin: string; cleanup: () => void | Promise<void> }> = [];
  const close = async () => {
    for (const { plugin, cleanup } of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        deps.log.error('plugin cleanup failed', { plugin, err });
      }
    }
  };
  try {
    for (const { specifier, plugin } of imported) {
      try {
        const onClose = (cleanup: () => void | Promise<void>) => {
          if (typeof cleanup !== 'function') throw new Error('onClose takes a function');
          cleanups.push({ plugin: plugin.name, cleanup });
        };
        await plugin.register(pluginApi(plugin.name, { types, middleware, routes }, deps, onClose));
      } catch (err) {
        throw new PluginError(`plugin ${specifier} failed to register: ${(err as Error).message}`);
      }
      deps.log.info('plugin loaded', { plugin: plugin.name, from: specifier });
    }
    const names = imported.map(({ plugin }) => plugin.name);
    for (const name of Object.keys(deps.options ?? {})) {
      if (!names.includes(name)) throw new PluginError(`plugin_options.${name}: no loaded plugin is named ${name} (loaded: ${names.join(', ')})`);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { types, middleware, routes, close };
}

/** What one plugin gets: the API, with its log lines, options and registrations under its name. */
function pluginApi(
  name: string,
  { types, middleware, routes }: Pick<LoadedPlugins, 'types' | 'middleware'> & { routes: Array<PluginRoute & { plugin: string }> },
  deps: PluginDeps,
  onClose: PluginApi['onClose'],
): PluginApi {
  const options = deps.options?.[name] ?? {};
  return {
    apiVersion: PLUGIN_API_STRING,
    log: scopedLogger(deps.log, { plugin: name }),
    db: deps.db,
    options,
    readOptions: async (schema) => {
      const result = await validateStandard(schema, options, ['plugin_options', name]);
      if ('value' in result) return result.value;
      throw new Error(result.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`).join('; '));
    },
    declareErrors: (codes) => types.addErrorCodes(codes, name),
    prepareRead: (build, options) => deps.reads.prepare(build, options),
    registerEndpointType: (type) => types.addType(type as unknown as EndpointType<unknown>, name),
    registerFunction: (fnName, fn) => types.addFunction(fnName, fn, name),
    getFunction: (fnName) => types.fn(fnName),
    metrics: deps.metrics ?? noPluginMetrics,
    onClose,
    useMiddleware: (point, fn) => middleware.add(point, fn, name),
    fleet: deps.fleet ?? NO_FLEET,
    registerRoute: (route) => {
      if (route.method !== 'GET' || !ROUTE_PATH.test(route.path))
        throw new Error(`registerRoute: GET and a path of fixed segments such as fleet/nodes (got ${route.method} ${route.path})`);
      const taken = routes.find((other) => other.path === route.path);
      if (taken) throw new Error(`registerRoute: ${route.path} is ${taken.plugin}'s already`);
      routes.push({ ...route, plugin: name });
    },
    secrets: {
      registerScheme: (scheme) => types.secrets.addScheme(scheme, name),
      value: (reference) => types.secrets.value(reference),
      mask: (text) => types.secrets.mask.mask(text),
      maskData: (data) => types.secrets.mask.maskData(data),
      maskStream: (release) => types.secrets.mask.stream(release),
    },
  };
}

/** Imports and registers in one go (config check, tests). */
export async function loadPlugins(specifiers: string[], deps: PluginDeps & { cwd?: string }): Promise<LoadedPlugins> {
  return registerPlugins(await importPlugins(specifiers, deps.cwd), deps);
}
