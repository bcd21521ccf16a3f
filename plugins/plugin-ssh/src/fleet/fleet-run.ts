import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '@tkgate/core';
import type { FleetNode } from '../inventory/fleet-node.js';
import type { InventorySnapshot } from '../inventory/inventory.js';
import { CredentialsUnusable, prepareIdentity, type SshCredentials } from '../ssh/credentials.js';
import { runOnNode, type NodeOutcome } from '../ssh/node-session.js';
import { MAX_REMOTE_COMMAND_BYTES, remoteCommandFits } from '../ssh/remote-command.js';
import { RunDirectory, workDirectoryProblem } from '../ssh/run-directory.js';
import type { Hop } from '../ssh/ssh-config.js';
import { executeFleet, type FleetOutcome, type MaxFailures, type NodeState } from './fleet-executor.js';

/** Where the command finds the request context (JSON): its stdin (the default), its last argument, or nowhere. */
export type ContextPlace = 'stdin' | 'argument' | 'none';

/** The programs and the place a fleet run works with (plugin options). */
export interface SshTools {
  ssh: string;
  sshKeygen: string;
  /** Runs' private directories are made in it. */
  workDirectory: string;
}

export interface FleetCommand {
  runId: string;
  /** The caller's name, for the certificate's key id. */
  username: string;
  startedAt: Date;
  /** The selected nodes, in order; `inventory` resolves their jump hosts and host keys. */
  nodes: readonly FleetNode[];
  inventory: InventorySnapshot;
  /** The command's argv, its references already resolved. */
  argv: readonly string[];
  context: { place: ContextPlace; json: string };
  /** `ssh.user`: the login name for every node, else each node's `user`. */
  user?: string;
  credentials: SshCredentials;
  parallel: number;
  keepGoing: boolean;
  maxFailures: MaxFailures;
  nodeTimeoutMs: number;
  connectTimeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  graceMs(): number;
  onNodeChange?(state: Readonly<NodeState>): void;
  onOutput?(node: string, stream: 'stdout' | 'stderr', bytes: Buffer): void;
  tools: SshTools;
  log: Logger;
}

/** The deepest chain of jump hosts a node may be reached through. */
export const MAX_JUMPS = 8;

/**
 * Runs one command on a run's nodes over SSH (docs/fleet.md): a private directory for the run, its identity in
 * it (the key, or a certificate made for the run), every node through `runOnNode` under the fleet's policy, and
 * the directory removed at the end whatever happened. Credentials that cannot be used end every node `failed`
 * (`auth_failed`) without a connection, with one log line saying why.
 */
export async function runFleetCommand(command: FleetCommand): Promise<FleetOutcome> {
  const { log } = command;
  const argv = command.context.place === 'argument' ? [...command.argv, command.context.json] : command.argv;
  // The endpoint refuses such a call before its run (413); a run never gets here with one.
  if (!remoteCommandFits(argv)) throw new RangeError(`the command is longer than a node's shell takes (${MAX_REMOTE_COMMAND_BYTES} bytes)`);
  const dir = await RunDirectory.create(command.tools.workDirectory);
  try {
    let identity: Awaited<ReturnType<typeof prepareIdentity>> | undefined;
    try {
      const jumps = command.nodes.some((node) => node.jump !== undefined);
      identity = await prepareIdentity(
        dir,
        command.credentials,
        { runId: command.runId, username: command.username, startedAt: command.startedAt },
        command.tools.sshKeygen,
        jumps,
      );
      if (identity.keyId) log.info('fleet run certificate made', { key_id: identity.keyId });
    } catch (err) {
      if (!(err instanceof CredentialsUnusable)) throw err;
      log.error('fleet run credentials unusable; no node is run', { reason: err.message, detail: err.cause });
    }
    const stdin = command.context.place === 'stdin' ? command.context.json : undefined;
    return await executeFleet({
      nodes: command.nodes.map((node) => node.name),
      parallel: command.parallel,
      keepGoing: command.keepGoing,
      maxFailures: command.maxFailures,
      nodeTimeoutMs: command.nodeTimeoutMs,
      signal: command.signal,
      onNodeChange: command.onNodeChange,
      runNode: async (name, index, stop): Promise<NodeOutcome> => {
        if (!identity) return { status: 'failed', reason: 'auth_failed', outputBytes: 0, outputTruncated: false };
        const hops = hopsOf(command.nodes[index]!, command.inventory);
        if (typeof hops === 'string') {
          log.warn('fleet node unreachable: its jump hosts cannot be followed', { node: name, detail: hops });
          return { status: 'failed', reason: 'unreachable', outputBytes: 0, outputTruncated: false };
        }
        const user = command.user ?? command.nodes[index]!.user;
        try {
          return await runOnNode({
            hops,
            index,
            dir,
            identity,
            ...(user !== undefined ? { user } : {}),
            argv,
            ...(stdin !== undefined ? { stdin } : {}),
            connectTimeoutMs: command.connectTimeoutMs,
            graceMs: command.graceMs,
            stop,
            maxOutputBytes: command.maxOutputBytes,
            onOutput: (stream, bytes) => command.onOutput?.(name, stream, bytes),
            sshPath: command.tools.ssh,
            log,
          });
        } catch (err) {
          log.error('fleet node could not be run', { node: name, err });
          return { status: 'failed', reason: 'unreachable', outputBytes: 0, outputTruncated: false };
        }
      },
    });
  } finally {
    await dir.remove();
  }
}

/** A node and its jump hosts, each with the keys pinned for it; or why the chain cannot be followed. */
export function hopsOf(node: FleetNode, inventory: InventorySnapshot): Hop[] | string {
  const hops: Hop[] = [];
  const seen = new Set<string>();
  for (let at: FleetNode | undefined = node; at;) {
    if (seen.has(at.name)) return `the jump hosts go round in a circle at ${at.name}`;
    if (hops.length > MAX_JUMPS) return `more than ${MAX_JUMPS} jump hosts`;
    seen.add(at.name);
    hops.push({ alias: hops.length === 0 ? 'node' : `jump${hops.length}`, name: at.name, host: at.host, port: at.port, keys: inventory.hostKeysOf(at) });
    if (at.jump === undefined) break;
    const jump = inventory.node(at.jump);
    if (!jump) return `the jump host ${at.jump} is not in the inventory`;
    at = jump;
  }
  return hops;
}

/**
 * The programs and work directory of plugin_options, checked once at registration: `ssh` and `ssh-keygen` found
 * in PATH (as absolute paths, which a jump host's ProxyCommand names too), the work directory usable in
 * ssh_config. A problem is thrown with words for the boot's one line.
 */
export function sshTools(options: { ssh: string; ssh_keygen: string; work_directory?: string }): SshTools {
  const workDirectory = path.resolve(options.work_directory ?? os.tmpdir());
  const problem = workDirectoryProblem(workDirectory);
  if (problem) throw new Error(`work_directory ${problem}`);
  return { ssh: program(options.ssh, 'ssh'), sshKeygen: program(options.ssh_keygen, 'ssh_keygen'), workDirectory };
}

function program(name: string, key: string): string {
  const candidates = name.includes('/') ? [path.resolve(name)] : (process.env.PATH ?? '/usr/bin:/bin').split(':').map((dir) => path.join(dir || '.', name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (workDirectoryProblem(candidate) === undefined) return candidate;
    } catch {
      // Not here.
    }
  }
  throw new Error(`${key}: ${name} is not an executable in PATH (Debian: apt-get install openssh-client)`);
}
