import { setMaxListeners } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import {
  GatewayError,
  invalidPayload,
  isSecretReference,
  type CheckEnvironment,
  type ConfigIssue,
  type DetachedOutcome,
  type DetachedRun,
  type PluginApi,
  type TkgatePlugin,
} from '@tkgate/core';
import { runFleetCommand, sshTools, type SshTools } from './fleet/fleet-run.js';
import type { FleetNode } from './inventory/fleet-node.js';
import { Inventory } from './inventory/inventory.js';
import { fleetListing } from './inventory/fleet-listing.js';
import { selectNodes } from './inventory/node-selection.js';
import type { SshCredentials } from './ssh/credentials.js';
import { MAX_REMOTE_COMMAND_BYTES, remoteCommandFits } from './ssh/remote-command.js';
import { DEFAULT_RUN_TIMEOUT_MS, referencesOf, resolveCall, sshConfigSchema, sshOptionsSchema, type SshConfig } from './ssh-endpoint-config.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  no_nodes: { status: 400, meaning: "No node of the inventory matches the endpoint's selection for this call." },
  too_many_nodes: { status: 400, meaning: "The selection has more nodes than the endpoint's nodes.max; `details.count` gives how many." },
} as const;

/** The run's own timeout, as the fleet executor hears it: running nodes end timed_out, pending ones skipped. */
const RUN_TIMEOUT = { status: 'timed_out', reason: 'timeout' } as const;

/**
 * `@tkgate/plugin-ssh`: the `ssh` endpoint type, one command on many nodes of the inventory as one run
 * (docs/fleet.md), and `GET {base}/fleet/nodes`. Built on the public plugin API only (docs/plugins.md, "A
 * job-running type"): the run's nodes are selected when it is created (selectNodes), each node's changes and
 * output go to core through the run (nodeChanged, output.writeNode), and its end says `nodes_failed`.
 */
const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-ssh',
  apiVersion: '^1.6',
  async register(api) {
    api.declareErrors(ERROR_CODES);
    const options = await api.readOptions(sshOptionsSchema);
    const inventory = new Inventory({
      sources: api.fleet.inventory,
      ...(api.fleet.knownHosts ? { knownHosts: api.fleet.knownHosts } : {}),
      baseDir: process.cwd(),
      log: api.log,
    });
    api.onClose(() => inventory.close());
    if (api.fleet.inventory.length > 0) {
      await inventory.load();
      await inventory.watch();
    }
    // ssh and ssh-keygen are looked for once an ssh endpoint needs them: a gateway without fleet runs needs no OpenSSH.
    let tools: SshTools | Error | undefined;
    const toolsNow = (): SshTools | Error => {
      if (tools === undefined) {
        try {
          tools = sshTools(options);
        } catch (err) {
          tools = err as Error;
        }
      }
      return tools;
    };

    api.registerRoute({
      method: 'GET',
      path: 'fleet/nodes',
      minPower: () => api.fleet.viewPower,
      handle: ({ query }) => ({ nodes: fleetListing(inventory.nodes, labelsOf(query)) }),
    });

    api.registerEndpointType<SshConfig>({
      type: 'ssh',
      configSchema: sshConfigSchema,
      audited: true,
      check: (config, env) => checkReferences(config, env, toolsNow()),
      detached: (config) => ({
        maxConcurrency: config.max_concurrency,
        maxQueued: config.max_queued,
        maxOutputBytes: config.max_output_bytes,
        ...(config.concurrency_key !== undefined && { concurrencyKey: config.concurrency_key }),
        ...(config.runs?.view_power !== undefined && { viewPower: config.runs.view_power }),
        ...(config.runs?.cancel_power !== undefined && { cancelPower: config.runs.cancel_power }),
      }),
      selectNodes: ({ config, context, only }) => {
        const { argv, match } = resolveCall(config, context);
        const withContext = config.context === 'argument' ? [...argv, JSON.stringify(context)] : argv;
        if (!remoteCommandFits(withContext))
          throw new GatewayError(413, 'payload_too_large', `the command is longer than a node's shell takes (${MAX_REMOTE_COMMAND_BYTES} bytes)`);
        const nodes = inventory.nodes.nodes;
        if (only) {
          const wanted = new Set(only);
          const found = nodes.filter((node) => wanted.has(node.name));
          if (found.length === 0) throw new GatewayError(400, 'no_nodes', 'none of the nodes to rerun is in the inventory now', { details: { names: only } });
          return found.map((node) => node.name);
        }
        return selectNodes(nodes, { match, ...(config.nodes.names && { names: config.nodes.names }), ...(config.nodes.max && { max: config.nodes.max }) }).map(
          (node) => node.name,
        );
      },
      runDetached: (run) => runOnFleet(run, api, inventory, toolsNow()),
      // Every call of an ssh endpoint is a run (detached): core answers 202 before execute would be reached.
      execute: () => Promise.reject(new Error('ssh endpoints run as runs only')),
    });
  },
};

/** `label.<key>=<value>` of the query: the labels a listed node must all have. */
function labelsOf(query: Readonly<Record<string, string>>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!key.startsWith('label.')) continue;
    const name = key.slice('label.'.length);
    if (name === '') throw invalidPayload([{ field: key, rule: 'format', message: 'a label filter is label.<key>=<value>' }]);
    labels[name] = value;
  }
  return labels;
}

/** The references of the command and the selection, checked against what the call can hold; OpenSSH found. */
function checkReferences(config: SshConfig, env: CheckEnvironment, tools: SshTools | Error): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const reference of referencesOf(config)) {
    if (reference.kind === 'path' && !env.pathParams.has(reference.name))
      issues.push({ path: reference.at, message: `$path.${reference.name}: the endpoint's path has no {${reference.name}}` });
    if (reference.kind === 'payload' && env.payloadFields && !env.payloadFields.has(reference.name))
      issues.push({ path: reference.at, message: `$payload.${reference.name}: client_filter.allowed_fields does not let ${reference.name} through` });
    if (reference.kind === 'context' && !env.contextFields.has(reference.name))
      issues.push({ path: reference.at, message: `$context.${reference.name}: the request context has no ${reference.name}` });
  }
  if (tools instanceof Error) issues.push({ path: [], message: `an ssh endpoint needs OpenSSH: ${tools.message}` });
  return issues;
}

/** One run on its nodes (docs/fleet.md): the run's selection as the inventory has it now, its credentials, its timeout. */
async function runOnFleet(run: DetachedRun<SshConfig>, api: PluginApi, inventory: Inventory, tools: SshTools | Error): Promise<DetachedOutcome> {
  const { config, log } = run;
  const snapshot = inventory.nodes;
  const report = run.nodeChanged ?? (() => undefined);
  const names = run.nodes ?? [];
  const nodes: FleetNode[] = [];
  let gone = 0;
  for (const name of names) {
    const node = snapshot.node(name);
    if (node) nodes.push(node);
    else {
      // Removed from the inventory since the run was asked for: nothing is known to reach it with.
      gone++;
      log.warn('fleet node no longer in the inventory; not run', { node: name });
      const at = new Date().toISOString();
      report({ name, status: 'failed', exit_code: null, signal: null, reason: 'unreachable', started_at: null, ended_at: at });
    }
  }
  if (tools instanceof Error) {
    log.error('fleet run cannot start: OpenSSH not found', { detail: tools.message });
    const at = new Date().toISOString();
    for (const node of nodes)
      report({ name: node.name, status: 'failed', exit_code: null, signal: null, reason: 'unreachable', started_at: null, ended_at: at });
    return { status: 'failed', reason: 'nodes_failed' };
  }
  if (nodes.length === 0) return { status: 'failed', reason: 'nodes_failed' };
  const { argv } = resolveCall(config, run.context);
  const masks = nodeMasks(run, api);
  const stop = new AbortController();
  // Every running node listens for the run's stop: `parallel` of them, more than EventTarget's default warning.
  setMaxListeners(0, stop.signal);
  const onStop = () => stop.abort(run.signal.reason);
  run.signal.addEventListener('abort', onStop, { once: true });
  const timer = setTimeout(() => stop.abort(RUN_TIMEOUT), config.timeout ?? DEFAULT_RUN_TIMEOUT_MS);
  try {
    const outcome = await runFleetCommand({
      runId: run.runId,
      username: String(run.context.username ?? ''),
      startedAt: new Date(),
      nodes,
      inventory: snapshot,
      argv,
      context: { place: config.context, json: JSON.stringify(run.context) },
      ...(config.ssh.user !== undefined && { user: config.ssh.user }),
      credentials: credentialsOf(config, api),
      parallel: config.parallel,
      keepGoing: config.keep_going,
      maxFailures: config.max_failures,
      nodeTimeoutMs: config.node_timeout,
      connectTimeoutMs: config.connect_timeout,
      maxOutputBytes: config.max_output_bytes,
      signal: stop.signal,
      graceMs: run.graceMs,
      onNodeChange: (state) => {
        // A node's end: what its masks hold back is its last output, before the end's event.
        if (state.status !== 'running') masks.end(state.name);
        report({
          name: state.name,
          status: state.status,
          exit_code: state.exit_code,
          signal: state.signal,
          reason: state.reason,
          started_at: state.started_at,
          ended_at: state.ended_at,
        });
      },
      onOutput: (node, stream, bytes) => masks.write(node, stream, bytes),
      tools,
      log,
    });
    const result = { node_counts: outcome.counts };
    if (outcome.status === 'succeeded' && gone === 0) return { status: 'succeeded', result };
    return {
      status: outcome.status === 'timed_out' ? 'timed_out' : 'failed',
      ...(outcome.reason === 'nodes_failed' || gone > 0 ? { reason: 'nodes_failed' as const } : {}),
    };
  } finally {
    clearTimeout(timer);
    run.signal.removeEventListener('abort', onStop);
  }
}

/**
 * Each node's stdout and stderr as the run's sink gets them: secret values the gateway handed out masked as `***`
 * (a value cut across chunks too), as exec's output is (docs/secrets.md).
 */
function nodeMasks(run: DetachedRun<SshConfig>, api: PluginApi) {
  const streams = new Map<string, { mask: ReturnType<PluginApi['secrets']['maskStream']>; decoder: StringDecoder }>();
  const pass = (node: string, stream: 'stdout' | 'stderr', text: string) => text !== '' && run.output.writeNode?.(node, stream, Buffer.from(text, 'utf8'));
  const of = (node: string, stream: 'stdout' | 'stderr') => {
    const key = `${node}\0${stream}`;
    let entry = streams.get(key);
    if (!entry) streams.set(key, (entry = { mask: api.secrets.maskStream((text) => pass(node, stream, text)), decoder: new StringDecoder('utf8') }));
    return entry;
  };
  return {
    write(node: string, stream: 'stdout' | 'stderr', bytes: Buffer) {
      const entry = of(node, stream);
      pass(node, stream, entry.mask.push(entry.decoder.write(bytes)));
    },
    end(node: string) {
      for (const stream of ['stdout', 'stderr'] as const) {
        const entry = streams.get(`${node}\0${stream}`);
        if (!entry) continue;
        pass(node, stream, entry.mask.push(entry.decoder.end()) + entry.mask.end());
        streams.delete(`${node}\0${stream}`);
      }
    },
  };
}

/** The endpoint's `ssh.key` or `ssh.certificate`, secrets read now (a changed file is read again). */
function credentialsOf(config: SshConfig, api: PluginApi): SshCredentials {
  const text = (value: unknown): string => (isSecretReference(value) ? api.secrets.value(value) : String(value));
  const { key, certificate } = config.ssh;
  if (certificate) return { certificate: { caKey: text(certificate.ca_key), principals: certificate.principals, validForMs: certificate.valid_for } };
  return { key: text(key) };
}

export default plugin;
