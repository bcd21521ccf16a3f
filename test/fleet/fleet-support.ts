import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '@tkgate/core';
import {
  Inventory,
  runFleetCommand,
  type FleetCommand,
  type FleetOutcome,
  type InventorySnapshot,
  type NodeState,
  sshTools,
  type SshCredentials,
  type SshTools,
} from '@tkgate/plugin-ssh/engine';
import type { SshdFleet } from '../support/sshd-nodes.js';

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** A logger that keeps its lines, for tests that read what the engine logged. */
export function memoryLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: string) => (msg: string, fields?: unknown) => lines.push({ level, msg, ...(fields as object) });
  return { log: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') }, lines };
}

/** An inventory node on one of the fleet's sshd servers, pinned to its first host key. */
export function nodeOn(fleet: SshdFleet, server: number, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const sshd = fleet.nodes[server]!;
  return { name, host: sshd.address, port: sshd.port, user: fleet.user, host_key: sshd.firstHostKey, labels: { server: String(server) }, ...extra };
}

/**
 * An `ssh` endpoint of a test toolkit: POST, on the nodes labelled role=web (at most 10), the request context not
 * sent, a 2 s connect timeout, logging in with a certificate of the fleet's CA for its user.
 */
export function fleetEndpoint(fleet: SshdFleet, pathName: string, command: readonly string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    path: pathName,
    method: 'POST',
    type: 'ssh',
    nodes: { match: { role: 'web' }, max: 10 },
    command,
    context: 'none',
    connect_timeout: '2s',
    ssh: { certificate: { ca_key: { secret: `file:${path.join(fleet.dir, 'ca_ed25519')}` }, principals: [fleet.user], valid_for: '5m' } },
    ...extra,
  };
}

/** An inventory of these nodes, read from a file as the gateway reads it. */
export async function inventoryOf(dir: string, nodes: ReadonlyArray<Record<string, unknown>>, knownHosts?: string): Promise<InventorySnapshot> {
  const file = path.join(dir, `inventory-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(nodes));
  const inventory = new Inventory({ sources: [{ file }], baseDir: dir, log: memoryLog().log, ...(knownHosts ? { knownHosts } : {}) });
  const [report] = await inventory.load();
  if (report!.problems.length > 0 || report!.unreadable) throw new Error(`inventory refused: ${JSON.stringify(report)}`);
  return inventory.nodes;
}

export interface FleetRunResult extends FleetOutcome {
  /** Each node's output, by stream, as it came. */
  output: Record<string, { stdout: string; stderr: string }>;
  changes: NodeState[];
  lines: LogLine[];
}

/** The certificate credentials of the fleet's CA, for `principals` (default: the nodes' user). */
export const certificateOf = (fleet: SshdFleet, principals = [fleet.user], validForMs = 900_000): SshCredentials => ({
  certificate: { caKey: fleet.caKey, principals, validForMs },
});

/**
 * One fleet run through the engine with test defaults (the fleet's certificate, parallel 10, connect_timeout
 * 5 s, a grace of 1 s), gathering node changes, output and log lines.
 */
export async function runFleet(
  fleet: SshdFleet,
  inventory: InventorySnapshot,
  names: readonly string[],
  argv: readonly string[],
  overrides: Partial<FleetCommand> = {},
): Promise<FleetRunResult> {
  const { log, lines } = memoryLog();
  const output: FleetRunResult['output'] = {};
  const changes: NodeState[] = [];
  const outcome = await runFleetCommand({
    runId: `run-${Math.random().toString(36).slice(2, 10)}`,
    username: 'alice',
    startedAt: new Date(),
    nodes: names.map((name) => inventory.node(name)!),
    inventory,
    argv,
    context: { place: 'none', json: '{}' },
    credentials: certificateOf(fleet),
    parallel: 10,
    keepGoing: false,
    maxFailures: 0,
    nodeTimeoutMs: 120_000,
    connectTimeoutMs: 5_000,
    maxOutputBytes: 1_048_576,
    signal: new AbortController().signal,
    graceMs: () => 1_000,
    onNodeChange: (state) => changes.push({ ...state }),
    onOutput: (node, stream, bytes) => {
      const kept = (output[node] ??= { stdout: '', stderr: '' });
      kept[stream] += bytes.toString('utf8');
    },
    tools: toolsIn(os.tmpdir()),
    log,
    ...overrides,
  });
  return { ...outcome, output, changes, lines };
}

/** The system's ssh and ssh-keygen as the plugin finds them, with runs' directories made in `workDirectory`. */
export const toolsIn = (workDirectory: string): SshTools => sshTools({ ssh: 'ssh', ssh_keygen: 'ssh-keygen', work_directory: workDirectory });

/** A node's final state in an outcome. */
export const stateOf = (outcome: FleetOutcome, name: string): NodeState => outcome.nodes.find((node) => node.name === name)!;
