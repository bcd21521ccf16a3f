import { z } from '@tkgate/core';
import { parseHostKey, type HostKey } from './host-keys.js';

/** A node of the inventory as the engine uses it (docs/fleet.md, "The inventory"). */
export interface FleetNode {
  /** Unique in the inventory; the characters of a path segment, so `runs/{id}/nodes/{name}` and `?node=` need no escaping. */
  name: string;
  host: string;
  port: number;
  /** The login name; else the endpoint's `ssh.user`, else ssh's own default (the gateway's user). */
  user?: string;
  labels: Readonly<Record<string, string>>;
  /** The node's own keys (`host_key` / `host_keys`): when given, they replace what known_hosts says of it. */
  hostKeys?: readonly HostKey[];
  /** Another node of the inventory the connection goes through (OpenSSH's ProxyJump). */
  jump?: string;
  /** Which source the node came from, as `GET fleet/nodes` shows it (a file's path, a URL, a command's program). */
  source: string;
}

export const NODE_NAME = /^[A-Za-z0-9._~-]+$/;
/** A host name or an IPv4 or IPv6 address: nothing ssh_config would read as a token or an option. */
const HOST = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
/** POSIX user names, and `user@domain` of directory-backed logins; never an option (`-…`). */
const USER = /^[A-Za-z0-9._][A-Za-z0-9._@-]*$/;
const LABEL_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

const hostKeyText = z.string().transform((text, ctx) => {
  const key = parseHostKey(text);
  if ('problem' in key) {
    ctx.addIssue({ code: 'custom', message: key.problem });
    return z.NEVER;
  }
  return key;
});

/**
 * One node as a source writes it. Label values may be written as numbers or booleans (YAML reads `tier: 1` as a
 * number); they are kept as text, and a selection compares text.
 */
export const nodeSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(NODE_NAME, 'must be letters, digits and . _ ~ - (the characters of a path segment)')
      .refine((name) => name !== '.' && name !== '..', 'must not be "." or ".."'),
    host: z.string().min(1).max(253).regex(HOST, 'must be a host name or an IP address'),
    port: z.number().int().min(1).max(65_535).default(22),
    user: z.string().min(1).max(64).regex(USER, 'must be a user name (letters, digits and . _ @ -, not starting with -)').optional(),
    labels: z
      .record(
        z.string().min(1).max(64).regex(LABEL_KEY, 'a label key is letters, digits and _ . -, starting with a letter or _'),
        z.union([z.string().max(256), z.number(), z.boolean()]).transform((value) => String(value)),
      )
      .default({}),
    host_key: hostKeyText.optional(),
    host_keys: z.array(hostKeyText).min(1).max(16).optional(),
    jump: z.string().min(1).max(128).regex(NODE_NAME, 'must name a node of the inventory').optional(),
  })
  .refine((node) => !(node.host_key && node.host_keys), { path: ['host_keys'], message: 'give host_key or host_keys, not both' })
  .refine((node) => node.jump !== node.name, { path: ['jump'], message: 'a node cannot be its own jump host' });

export type WrittenNode = z.infer<typeof nodeSchema>;

/** A checked node as the engine keeps it. */
export function fleetNode(written: WrittenNode, source: string): FleetNode {
  const hostKeys = written.host_keys ?? (written.host_key ? [written.host_key] : undefined);
  return {
    name: written.name,
    host: written.host,
    port: written.port,
    ...(written.user !== undefined ? { user: written.user } : {}),
    labels: written.labels,
    ...(hostKeys ? { hostKeys } : {}),
    ...(written.jump !== undefined ? { jump: written.jump } : {}),
    source,
  };
}
