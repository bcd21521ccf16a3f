import { nodeListing, type InventorySnapshot, type NodeListing } from './inventory.js';

/**
 * The nodes `GET {base}/fleet/nodes?label.k=v` and `tkgate fleet nodes --label k=v` list: those having every given
 * label (values compared as text), in inventory order, as nodeListing shows them (never key material).
 */
export function fleetListing(snapshot: InventorySnapshot, labels: Readonly<Record<string, string>>): NodeListing[] {
  const wanted = Object.entries(labels);
  return snapshot.nodes.filter((node) => wanted.every(([key, value]) => node.labels[key] === value)).map((node) => nodeListing(node, snapshot));
}
