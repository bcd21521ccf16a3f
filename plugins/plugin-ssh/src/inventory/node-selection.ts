import { GatewayError } from '@tkgate/core';
import type { FleetNode } from './fleet-node.js';

/**
 * An endpoint's `nodes` with its references resolved by the caller (`$payload.env` → `"prod"`): labels that must
 * all be equal, the names a node must have (when given), and the most nodes a run may have.
 */
export interface NodeSelection {
  match?: Readonly<Record<string, string | number | boolean>>;
  names?: readonly string[];
  max?: number;
}

/**
 * The nodes a run takes, in inventory order: named (when `names` is given) and matching every label of `match`
 * (values compared as text, as labels are kept). None is 400 `no_nodes`; more than `max` is 400 `too_many_nodes`
 * with the count, so that a typo in a label cannot reach the whole fleet.
 */
export function selectNodes(nodes: readonly FleetNode[], selection: NodeSelection): FleetNode[] {
  const wanted = Object.entries(selection.match ?? {}).map(([key, value]) => [key, String(value)] as const);
  const names = selection.names ? new Set(selection.names) : undefined;
  const selected = nodes.filter((node) => (!names || names.has(node.name)) && wanted.every(([key, value]) => node.labels[key] === value));
  if (selected.length === 0) {
    throw new GatewayError(400, 'no_nodes', 'no node of the inventory matches the selection', {
      details: { match: Object.fromEntries(wanted), names: selection.names ?? null },
    });
  }
  if (selection.max !== undefined && selected.length > selection.max) {
    throw new GatewayError(400, 'too_many_nodes', `the selection has ${selected.length} nodes, more than its max of ${selection.max}`, {
      details: { count: selected.length, max: selection.max },
    });
  }
  return selected;
}
