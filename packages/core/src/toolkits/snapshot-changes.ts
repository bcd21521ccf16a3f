import type { CompiledEndpoint, CompiledToolkit } from './compiled-toolkit.js';
import type { ToolkitSnapshot } from './toolkit-resolution.js';

/** What a reload changes, toolkit by toolkit: what to log, and which endpoint versions retire. */
export interface SnapshotChanges {
  added: CompiledToolkit[];
  changed: Array<{ before: CompiledToolkit; after: CompiledToolkit; removedEndpoints: string[] }>;
  removed: CompiledToolkit[];
  /** Endpoint versions live before and not after (by identity: an unchanged endpoint is kept as is). */
  retired: Set<CompiledEndpoint>;
  /** Endpoint versions live after and not before: new ones, loaded (EndpointType.onLoad). */
  loaded: Set<CompiledEndpoint>;
  /**
   * Whether the reload takes away a toolkit or an endpoint, or serves a toolkit from another file than
   * before: such changes wait for a longer quiet time (see the watcher), as they are what a half-done
   * write or copy looks like.
   */
  drastic: boolean;
}

export function compareSnapshots(before: ToolkitSnapshot, after: ToolkitSnapshot): SnapshotChanges {
  const changes: SnapshotChanges = { added: [], changed: [], removed: [], retired: new Set(), loaded: new Set(), drastic: false };
  for (const [name, toolkit] of after) {
    const old = before.get(name);
    if (!old) changes.added.push(toolkit);
    else if (old !== toolkit) changes.changed.push({ before: old, after: toolkit, removedEndpoints: missingRoutes(old, toolkit) });
  }
  for (const [name, toolkit] of before) if (!after.has(name)) changes.removed.push(toolkit);
  const live = new Set([...after.values()].flatMap(endpointsOf));
  const was = new Set([...before.values()].flatMap(endpointsOf));
  for (const endpoint of was) if (!live.has(endpoint)) changes.retired.add(endpoint);
  for (const endpoint of live) if (!was.has(endpoint)) changes.loaded.add(endpoint);
  changes.drastic =
    changes.removed.length > 0 || changes.changed.some((change) => change.removedEndpoints.length > 0 || change.before.file !== change.after.file);
  return changes;
}

function endpointsOf(toolkit: CompiledToolkit): CompiledEndpoint[] {
  return [...toolkit.routes.values()].flatMap((byMethod) => [...byMethod.values()]);
}

/** "METHOD path" of every route of `before` that `after` no longer answers (all of them when it moved or was disabled). */
function missingRoutes(before: CompiledToolkit, after: CompiledToolkit): string[] {
  const gone = before.kind !== after.kind || (before.enabled && !after.enabled);
  const missing: string[] = [];
  for (const [route, byMethod] of before.routes) {
    for (const method of byMethod.keys()) if (gone || !after.routes.get(route)?.has(method)) missing.push(`${method} ${route}`);
  }
  return missing;
}
