import { notFound } from '../errors.js';
import type { Stage } from '../http/stage.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { AddressedState, ToolkitFound } from './pipeline-state.js';

/**
 * Step 1: the toolkit exists and is enabled, else 404 toolkit_not_found. The request keeps this
 * toolkit object to the end, so a reload meanwhile does not change what it runs.
 */
export function toolkitStep(registry: ToolkitRegistry): Stage<AddressedState, ToolkitFound> {
  return (ctx, next) => {
    const { kind, toolkit: name } = ctx.state.address;
    const toolkit = registry.snapshot.get(name);
    if (!toolkit || toolkit.kind !== kind || !toolkit.enabled) {
      throw notFound('toolkit_not_found', `no enabled ${kind} toolkit named ${name}`);
    }
    (ctx.state as AddressedState & ToolkitFound).toolkit = toolkit;
    return next();
  };
}
