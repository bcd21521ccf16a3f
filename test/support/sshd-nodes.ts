import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually.js';
import { tempDir } from './paths.js';

const run = promisify(execFile);
const SSHD = '/usr/sbin/sshd';

/**
 * Real OpenSSH servers as fleet nodes (Debian's openssh-server): one `sshd` per node on a loopback address of its
 * own (127.0.0.2, 127.0.0.3, ...) and a free port, with its own host key and configuration in the suite's
 * temporary directory. Every node trusts the fleet's CA (`TrustedUserCAKeys`) and its user key
 * (`AuthorizedKeysFile`), logs at VERBOSE to a file (the certificate's key id is read back from it), and sets
 * `TKGATE_TEST_SSHD=<index>` in its sessions, so a command says which server it ran on. The login user is the
 * test's own (root here: sshd runs as the test user).
 */
export interface SshdNode {
  readonly index: number;
  readonly address: string;
  readonly port: number;
  /** The host key the node presents now: `ssh-ed25519 AAAA…`. */
  hostKey: string;
  /** The key it was started with (what an inventory pins). */
  readonly firstHostKey: string;
  readonly dir: string;
  /** sshd's own log so far. */
  log(): string;
  /** SIGKILL to every sshd process of the node, the listener and its connections: the node is gone. */
  kill(): Promise<void>;
  /** SIGSTOP to the same processes: a host that vanished without closing its connections. */
  pause(): Promise<void>;
  resume(): void;
  /** Starts the node again (after `kill`), on the same address and port, with its current host key. */
  restart(): Promise<void>;
  /** Stops the node and starts it again with a new host key. */
  presentAnotherHostKey(): Promise<void>;
}

export interface SshdFleet {
  readonly dir: string;
  readonly nodes: SshdNode[];
  /** The login name the nodes accept: the test's own user. */
  readonly user: string;
  /** The private key the nodes accept (in their authorized_keys). */
  readonly userKey: string;
  /** The CA private key whose user certificates the nodes accept. */
  readonly caKey: string;
  stop(): Promise<void>;
}

async function keypair(file: string, comment: string): Promise<{ privateKey: string; publicKey: string }> {
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
  return { privateKey: readFileSync(file, 'utf8'), publicKey: readFileSync(`${file}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ') };
}

/** A port nothing listens on at `address` right now. */
function freePortOn(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, address, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Whether an SSH server answers its banner at address:port. */
function answers(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port });
    socket.setTimeout(2_000);
    socket.once('data', (chunk: Buffer) => {
      socket.destroy();
      resolve(chunk.toString('latin1').startsWith('SSH-2.0'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The parent pid of each process, from /proc. */
function parents(): Map<number, number> {
  const found = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      found.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
  } catch {
    return '';
  }
}

/** The listener and the sshd processes under it (its connections): not the sessions' commands. */
function sshdProcesses(listener: number): number[] {
  const parentOf = parents();
  const found = [listener];
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, parent] of parentOf) {
      if (!found.includes(pid) && found.includes(parent) && commandName(pid).startsWith('sshd')) {
        found.push(pid);
        grew = true;
      }
    }
  }
  return found.filter((pid) => parentOf.has(pid));
}

/** Processes now in process group `group` (not zombies): what is left of a command on a node. */
export function processesInGroup(group: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const [state, , pgrp] = fields.slice(fields.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === group && state !== 'Z') found.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

/** A process's state letter (R, S, T, Z ...), or undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return fields.slice(fields.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Whether a process is alive (a zombie counts as gone). */
export const processAlive = (pid: number): boolean => ![undefined, 'Z'].includes(stateOf(pid));

export interface SshdFleetOptions {
  firstAddress?: number;
  /**
   * Sessions start with SHLVL=1, so the login user's bash does not read its ~/.bashrc (bash reads it for a command
   * sent over SSH only at shell level 1): the bench's nodes, where root's rc runs pyenv's init, seconds a login, on
   * tkgate's and Ansible's side alike.
   */
  quietLogins?: boolean;
}

export async function startSshdNodes(count: number, options: SshdFleetOptions = {}): Promise<SshdFleet> {
  const dir = tempDir('tkgate-sshd-');
  // sshd refuses to start without its privilege separation directory, which the Debian package makes at boot.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const user = (await run('id', ['-un'])).stdout.trim();
  const userPair = await keypair(path.join(dir, 'user_ed25519'), 'fleet test user');
  const caPair = await keypair(path.join(dir, 'ca_ed25519'), 'fleet test ca');
  writeFileSync(path.join(dir, 'authorized_keys'), `${userPair.publicKey}\n`, { mode: 0o600 });
  writeFileSync(path.join(dir, 'ca.pub'), `${caPair.publicKey}\n`);
  const children = new Set<ChildProcess>();

  const startNode = async (index: number): Promise<SshdNode> => {
    const address = `127.0.0.${(options.firstAddress ?? 2) + index}`;
    const nodeDir = path.join(dir, `node-${index}`);
    mkdirSync(nodeDir);
    let key = await keypair(path.join(nodeDir, 'host_ed25519'), `node ${index}`);
    const firstHostKey = key.publicKey;
    const port = await freePortOn(address);
    const logFile = path.join(nodeDir, 'sshd.log');
    const config = path.join(nodeDir, 'sshd_config');
    let listener: ChildProcess | undefined;
    const writeConfig = (hostKeyFile: string) =>
      writeFileSync(
        config,
        [
          `ListenAddress ${address}:${port}`,
          `HostKey ${hostKeyFile}`,
          `PidFile ${path.join(nodeDir, 'sshd.pid')}`,
          `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
          `TrustedUserCAKeys ${path.join(dir, 'ca.pub')}`,
          'StrictModes no',
          'UsePAM no',
          'PasswordAuthentication no',
          'KbdInteractiveAuthentication no',
          'PermitRootLogin prohibit-password',
          'UseDNS no',
          'PrintMotd no',
          'LogLevel VERBOSE',
          // A fleet run opens many connections at once; sshd's default starts dropping them at 10.
          'MaxStartups 200:30:400',
          `SetEnv TKGATE_TEST_SSHD=${index}${options.quietLogins ? ' SHLVL=1' : ''}`,
          '',
        ].join('\n'),
      );
    writeConfig(path.join(nodeDir, 'host_ed25519'));
    let keyGeneration = 0;
    const start = async () => {
      const child = spawn(SSHD, ['-D', '-f', config, '-E', logFile], { stdio: 'ignore', detached: true });
      children.add(child);
      child.once('exit', () => children.delete(child));
      listener = child;
      await eventually(`sshd ${address}:${port} answers`, () => answers(address, port), 30_000);
    };
    const processes = () => (listener?.pid && listener.exitCode === null && listener.signalCode === null ? sshdProcesses(listener.pid) : []);
    const signalAll = (signal: NodeJS.Signals) => {
      for (const pid of processes()) {
        try {
          process.kill(pid, signal);
        } catch {
          // Gone already.
        }
      }
    };
    const kill = async () => {
      const gone = listener;
      signalAll('SIGKILL');
      if (gone && gone.exitCode === null && gone.signalCode === null) await new Promise((resolve) => gone.once('exit', resolve));
    };
    await start();
    const node: SshdNode = {
      index,
      address,
      port,
      hostKey: key.publicKey,
      firstHostKey,
      dir: nodeDir,
      log: () => {
        try {
          return readFileSync(logFile, 'utf8');
        } catch {
          return '';
        }
      },
      kill,
      async pause() {
        const pids = processes();
        signalAll('SIGSTOP');
        // A stopped process shows T, at its next scheduling.
        await eventually('the node stopped', () => pids.every((pid) => [undefined, 'Z', 'T'].includes(stateOf(pid))));
      },
      resume: () => signalAll('SIGCONT'),
      restart: start,
      async presentAnotherHostKey() {
        await kill();
        key = await keypair(path.join(nodeDir, `host_ed25519_${++keyGeneration}`), `node ${index} again`);
        node.hostKey = key.publicKey;
        writeConfig(path.join(nodeDir, `host_ed25519_${keyGeneration}`));
        await start();
      },
    };
    return node;
  };

  const nodes: SshdNode[] = [];
  try {
    for (let index = 0; index < count; index++) nodes.push(await startNode(index));
  } catch (err) {
    await Promise.all(nodes.map((node) => node.kill()));
    throw err;
  }
  return {
    dir,
    nodes,
    user,
    userKey: userPair.privateKey,
    caKey: caPair.privateKey,
    async stop() {
      for (const node of nodes) {
        node.resume();
        await node.kill();
      }
      for (const child of children) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
