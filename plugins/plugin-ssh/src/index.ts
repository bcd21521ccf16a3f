import type { TkgatePlugin } from '@tkgate/core';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  no_nodes: { status: 400, meaning: "No node of the inventory matches the endpoint's selection for this call." },
  too_many_nodes: { status: 400, meaning: "The selection has more nodes than the endpoint's nodes.max; `details.count` gives how many." },
} as const;

/**
 * `@tkgate/plugin-ssh`: the `ssh` endpoint type, one command on many nodes as one run (docs/fleet.md). The engine
 * (inventory, selection, OpenSSH sessions, the fleet executor) is built; the type itself registers once the
 * plugin API can give a run its nodes (per-node status and output), so for now the plugin declares its codes only.
 */
const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-ssh',
  apiVersion: '^1.5',
  register(api) {
    api.declareErrors(ERROR_CODES);
  },
};

export default plugin;
