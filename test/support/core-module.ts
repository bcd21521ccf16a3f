import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './paths.js';

/**
 * A module of @tkgate/core's build that its public entry does not export, for the unit tests of pure
 * modules (test/unit/): `await coreModule<typeof import('<relative path to it>')>('config/duration.js')`.
 * The type comes from the same file, named relative to the test's source.
 */
export function coreModule<T>(file: string): Promise<T> {
  return import(pathToFileURL(path.join(repoRoot, 'packages/core/dist', file)).href) as Promise<T>;
}
