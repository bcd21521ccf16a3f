import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { fileURLToPath } from 'node:url';
import { tempDir } from './paths.js';

export const testPluginPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'test-plugin.js');
export const pluginsWithTestFunctions = ['@tkgate/plugin-internal', '@tkgate/plugin-http', '@tkgate/plugin-exec', '@tkgate/plugin-ssh', testPluginPath];

export type ToolkitDoc = Record<string, unknown>;

/** Writes toolkit documents as YAML (or JSON for *.json names) into a new directory. */
export function toolkitDir(files: Record<string, ToolkitDoc | string>): string {
  const dir = tempDir('tkgate-toolkits-');
  for (const [name, doc] of Object.entries(files)) writeToolkit(dir, name, doc);
  return dir;
}

export function writeToolkit(dir: string, name: string, doc: ToolkitDoc | string): void {
  writeFileSync(path.join(dir, name), serialise(name, doc));
}

/** How editors like vim save: write a temporary file, then rename it over the original. */
export function saveByRename(dir: string, name: string, doc: ToolkitDoc | string): void {
  const temporary = path.join(dir, `.${name}.swp`);
  writeFileSync(temporary, serialise(name, doc));
  renameSync(temporary, path.join(dir, name));
}

function serialise(name: string, doc: ToolkitDoc | string): string {
  if (typeof doc === 'string') return doc;
  return name.endsWith('.json') ? JSON.stringify(doc, null, 2) : YAML.stringify(doc);
}

/** An endpoint that answers with the request context it was given. */
export const echoEndpoint = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  path: 'echo',
  method: ['GET', 'POST'],
  type: 'internal',
  handler: 'echo',
  ...extra,
});
