import { knownHostsName, type HostKey } from '../inventory/host-keys.js';
import { shellQuote } from './remote-command.js';

/** One connection of a node's way: the node itself first, then its jump host, then that one's, and so on. */
export interface Hop {
  /** Host name in the per-node ssh_config: `node` for the target, `jump1`, `jump2`… for the jump hosts. */
  alias: string;
  /** The inventory's name of the node, for logs. */
  name: string;
  host: string;
  port: number;
  keys: readonly HostKey[];
}

/** The files of one node's connection, all in the run's private directory. */
export interface NodeFiles {
  config: string;
  knownHosts: string;
  /** ssh's own log (`-E`) of the connection to `alias`: kept apart from the node's stderr. */
  logOf(alias: string): string;
}

export interface Identity {
  /** The private key (the endpoint's, or the one made for this run). */
  identityFile: string;
  /** The run's certificate, with `ssh.certificate`. */
  certificateFile?: string;
  /** Its certificate for jump hosts (port forwarding only), when a node of the run has one. */
  jumpCertificateFile?: string;
}

export interface ConnectTiming {
  connectTimeoutMs: number;
}

/**
 * ServerAlive probes so that a host that vanished without closing the connection is noticed within about
 * `connect_timeout`: three unanswered probes, a third of it apart (at least a second).
 */
export function keepalive(connectTimeoutMs: number): { intervalSeconds: number; countMax: number } {
  return { intervalSeconds: Math.max(1, Math.round(connectTimeoutMs / 3_000)), countMax: 3 };
}

/**
 * A value of ssh_config that ssh expands `%` tokens in (files, ProxyCommand): `%` doubled. Paths are the run
 * directory's, made by tkgate; they are checked to need no quoting (`checkedWorkDirectory`).
 */
const literal = (value: string) => value.replaceAll('%', '%%');

/**
 * A node's ssh_config (read with `-F`, so neither ~/.ssh/config nor /etc/ssh/ssh_config applies): the target and
 * its jump hosts, each pinned to the run's known_hosts file, reached with one identity and user, with everything
 * an interactive login would add turned off (agent, X11 and port forwarding, a pty, the escape character,
 * connection sharing, keys learnt from the server or DNS). A jump host is reached by a ProxyCommand running this
 * same ssh (`-W`, what ProxyJump does), with its own log so that its failures are told apart; ssh runs that
 * string with /bin/sh, and it holds nothing but these paths and aliases.
 */
export function sshConfigText(
  hops: readonly Hop[],
  user: string | undefined,
  identity: Identity,
  files: NodeFiles,
  timing: ConnectTiming,
  sshPath: string,
): string {
  const alive = keepalive(timing.connectTimeoutMs);
  return hops
    .map((hop, index) => {
      const next = hops[index + 1];
      const proxy = next
        ? [sshPath, '-F', files.config, '-E', files.logOf(next.alias), '-W', '[%h]:%p', next.alias]
            .map((part, at) => (at === 6 ? shellQuote(part) : shellQuote(literal(part))))
            .join(' ')
        : 'none';
      const lines = [
        `Host ${hop.alias}`,
        `HostName ${literal(hop.host)}`,
        `Port ${hop.port}`,
        ...(user !== undefined ? [`User ${user}`] : []),
        `IdentityFile ${literal(identity.identityFile)}`,
        ...certificateOf(identity, index > 0).map((file) => `CertificateFile ${literal(file)}`),
        'IdentitiesOnly yes',
        'IdentityAgent none',
        'AddKeysToAgent no',
        'PreferredAuthentications publickey',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'BatchMode yes',
        `UserKnownHostsFile ${literal(files.knownHosts)}`,
        'GlobalKnownHostsFile /dev/null',
        'StrictHostKeyChecking yes',
        'CheckHostIP no',
        'UpdateHostKeys no',
        'VerifyHostKeyDNS no',
        'HashKnownHosts no',
        'ForwardAgent no',
        'ForwardX11 no',
        'ClearAllForwardings yes',
        'Tunnel no',
        'RequestTTY no',
        'PermitLocalCommand no',
        'ControlMaster no',
        'ControlPath none',
        'EscapeChar none',
        'ConnectionAttempts 1',
        `ConnectTimeout ${Math.max(1, Math.ceil(timing.connectTimeoutMs / 1000))}`,
        `ServerAliveInterval ${alive.intervalSeconds}`,
        `ServerAliveCountMax ${alive.countMax}`,
        'TCPKeepAlive yes',
        'LogLevel VERBOSE',
        `ProxyCommand ${proxy}`,
      ];
      return lines.join('\n  ');
    })
    .join('\n\n')
    .concat('\n');
}

/** The certificate a hop logs in with: a jump host's permits the forwarding `-W` asks of it. */
function certificateOf(identity: Identity, jump: boolean): string[] {
  const file = jump ? (identity.jumpCertificateFile ?? identity.certificateFile) : identity.certificateFile;
  return file ? [file] : [];
}

/** The run's known_hosts lines of a node's way: only its pinned keys, each under the name ssh looks it up by. */
export function knownHostsText(hops: readonly Hop[]): string {
  return hops
    .flatMap((hop) =>
      hop.keys.map((key) => {
        const marker = key.marker === 'cert-authority' ? '@cert-authority ' : key.marker === 'revoked' ? '@revoked ' : '';
        return `${marker}${knownHostsName(hop.host, hop.port)} ${key.type} ${key.base64}\n`;
      }),
    )
    .join('');
}
