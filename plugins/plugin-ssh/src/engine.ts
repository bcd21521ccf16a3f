/**
 * The fleet engine of `@tkgate/plugin-ssh`, apart from the plugin API: the inventory, node selection, one node's
 * run through OpenSSH, and the fleet executor. Exported for tkgate's own tests (`@tkgate/plugin-ssh/engine`).
 */
export * from './inventory/host-keys.js';
export * from './inventory/fleet-node.js';
export * from './inventory/inventory-text.js';
export * from './inventory/node-list.js';
export * from './inventory/inventory-sources.js';
export * from './inventory/inventory.js';
export * from './inventory/node-selection.js';
export * from './ssh/remote-command.js';
export * from './ssh/ssh-config.js';
export * from './ssh/run-directory.js';
export * from './ssh/credentials.js';
export * from './ssh/node-session.js';
export * from './fleet/fleet-executor.js';
export * from './fleet/fleet-run.js';
export * from './ssh-endpoint-config.js';
export * from './inventory/fleet-listing.js';
