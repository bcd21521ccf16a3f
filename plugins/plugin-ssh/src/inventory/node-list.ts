import { describeProblem, type ToolkitProblem } from '@tkgate/core';
import { fleetNode, nodeSchema, type FleetNode } from './fleet-node.js';
import type { InventoryText } from './inventory-text.js';

/** The most nodes one source may hold: a CMDB answer past it is refused, not half read. */
export const MAX_NODES_PER_SOURCE = 100_000;
/** The most problems named for one version of a source; the rest are counted. */
const MAX_PROBLEMS = 20;

/**
 * What is wrong with a version of a source: where (`source`, and line and column when it is a file), the key path
 * (`3.host`), the node (`node web-3`, by name when it has one, else by position) and what; one line through
 * core's `describeProblem`, as toolkit problems are shown: `nodes.yaml:12:5: 3.host (node web-3): …`.
 */
export type InventoryProblem = ToolkitProblem;

export const describeInventoryProblem = (problem: InventoryProblem): string => describeProblem(problem);

/**
 * Checks a source's document: a list of nodes, each valid, names unique in it and not taken by another source
 * (`taken`: the names of the other sources' current versions), and every `jump` naming a node of this source or
 * of another one, without a cycle. Any problem refuses the whole version (the source keeps its last good one).
 */
export function checkNodeList(
  source: string,
  text: InventoryText,
  taken: ReadonlyMap<string, string>,
): { nodes: FleetNode[] } | { problems: InventoryProblem[] } {
  const problems: InventoryProblem[] = [];
  let hidden = 0;
  const add = (path: Array<string | number>, message: string, node?: string, key = false) => {
    if (problems.length >= MAX_PROBLEMS) {
      hidden++;
      return;
    }
    const position = text.locate(path, key);
    problems.push({
      file: source,
      path: path.join('.'),
      ...(position ? { line: position.line, column: position.column } : {}),
      ...(node !== undefined ? { endpoint: `node ${node}` } : {}),
      message,
    });
  };
  const { document } = text;
  if (!Array.isArray(document)) {
    add([], 'must be a list of nodes ({ name, host, port, user, labels, host_key | host_keys, jump })');
    return { problems };
  }
  if (document.length > MAX_NODES_PER_SOURCE) {
    add([], `holds ${document.length} nodes; a source holds at most ${MAX_NODES_PER_SOURCE}`);
    return { problems };
  }
  const nodes: FleetNode[] = [];
  const indexOf = new Map<string, number>();
  document.forEach((written, index) => {
    const named = isRecord(written) && typeof written.name === 'string' && written.name.length <= 128 ? written.name : `#${index}`;
    const parsed = nodeSchema.safeParse(written);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const path = [index, ...(issue.path as Array<string | number>)];
        if (issue.code === 'unrecognized_keys') for (const key of issue.keys) add([...path, key], 'unknown key', named, true);
        else add(path, issue.message, named);
      }
      return;
    }
    const node = fleetNode(parsed.data, source);
    const earlier = indexOf.get(node.name);
    if (earlier !== undefined) add([index, 'name'], `a second node named ${node.name} (the first is node #${earlier})`, node.name);
    else if (taken.has(node.name)) add([index, 'name'], `${node.name} is already a node of ${taken.get(node.name)}`, node.name);
    indexOf.set(node.name, index);
    nodes.push(node);
  });
  if (problems.length === 0) {
    const byName = new Map(nodes.map((node) => [node.name, node]));
    nodes.forEach((node, index) => {
      if (node.jump === undefined) return;
      if (!byName.has(node.jump) && !taken.has(node.jump)) add([index, 'jump'], `names no node of the inventory (${node.jump})`, node.name);
      else if (jumpsInACircle(node, byName)) add([index, 'jump'], 'its jump hosts go round in a circle', node.name);
    });
  }
  if (hidden > 0) problems.push({ file: source, path: '', message: `and ${hidden} more problems` });
  return problems.length > 0 ? { problems } : { nodes };
}

/** Whether following `jump` from a node of this source comes back to it (jumps into other sources end the walk). */
function jumpsInACircle(start: FleetNode, byName: ReadonlyMap<string, FleetNode>): boolean {
  const seen = new Set([start.name]);
  for (let next = start.jump; next !== undefined; next = byName.get(next)?.jump) {
    if (seen.has(next)) return true;
    seen.add(next);
  }
  return false;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
