import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A host's public key as OpenSSH writes it (`ssh-ed25519 AAAA…`), checked: a known type, base64 that decodes,
 * and a blob that names the same type. `marker` carries a known_hosts line's `@cert-authority` (the key signs
 * host certificates) or `@revoked` (never accepted) through to the per-run known_hosts file.
 */
export interface HostKey {
  type: string;
  /** The key blob, base64 as written (no comment). */
  base64: string;
  /** `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it. */
  fingerprint: string;
  marker?: 'cert-authority' | 'revoked';
}

/** The key types OpenSSH accepts as host keys (plain keys; host certificates are checked through @cert-authority). */
export const HOST_KEY_TYPES: ReadonlySet<string> = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
  'ssh-dss',
]);

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** A key blob longer than this is no host key (an RSA key of 16384 bits is about 2 KiB). */
const MAX_BLOB_BYTES = 8_192;

/** `SHA256:…` of a key blob. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The type and base64 of a key, or why they are not one: the words name no value. */
export function checkHostKey(type: string, base64: string): HostKey | { problem: string } {
  if (!HOST_KEY_TYPES.has(type)) return { problem: `not a host key type OpenSSH knows (${[...HOST_KEY_TYPES].slice(0, 5).join(', ')}, …)` };
  if (!BASE64.test(base64) || base64.length % 4 !== 0) return { problem: 'the key is not base64' };
  const blob = Buffer.from(base64, 'base64');
  if (blob.length > MAX_BLOB_BYTES) return { problem: 'the key is too long for a host key' };
  // The blob starts with its own type as an SSH string (a 4-byte length, then the name).
  const named = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  if (named < 1 || named > 64 || blob.length < 4 + named || blob.toString('latin1', 4, 4 + named) !== type) {
    return { problem: `the key's data is not a ${type} key` };
  }
  return { type, base64, fingerprint: fingerprintOf(blob) };
}

/** A host key as written in the inventory: `<type> <base64> [comment]`. */
export function parseHostKey(text: string): HostKey | { problem: string } {
  const [type, base64, ...rest] = text.trim().split(/\s+/);
  if (!type || !base64) return { problem: 'must be "<type> <base64>" as in a .pub file or known_hosts (e.g. "ssh-ed25519 AAAA…")' };
  if (rest.length > 0 && rest.join(' ').length > 1024) return { problem: 'the comment after the key is too long' };
  return checkHostKey(type, base64);
}

/** One usable line of a known_hosts file. */
export interface KnownHostsEntry {
  line: number;
  /** Comma-separated patterns (`!` negates; `*`, `?` wildcards; `[host]:port`), or a hashed name `|1|salt|hash`. */
  hosts: string;
  key: HostKey;
}

export interface KnownHostsProblem {
  line: number;
  message: string;
}

/**
 * Reads a file in OpenSSH's known_hosts format (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT"): blank lines and `#`
 * comments skipped, an optional `@cert-authority` or `@revoked` marker, host patterns or a hashed host name, the
 * key type and its base64, an optional comment. A line that does not read is a problem (by line number) and left
 * out; the others are kept.
 */
export function parseKnownHosts(text: string): { entries: KnownHostsEntry[]; problems: KnownHostsProblem[] } {
  const entries: KnownHostsEntry[] = [];
  const problems: KnownHostsProblem[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    const content = raw.trim();
    if (content === '' || content.startsWith('#')) return;
    const fields = content.split(/\s+/);
    let marker: HostKey['marker'];
    if (fields[0]!.startsWith('@')) {
      const name = fields.shift()!;
      if (name !== '@cert-authority' && name !== '@revoked') {
        problems.push({ line, message: 'an unknown marker (known ones: @cert-authority, @revoked)' });
        return;
      }
      marker = name === '@cert-authority' ? 'cert-authority' : 'revoked';
    }
    const [hosts, type, base64] = fields;
    if (!hosts || !type || !base64) {
      problems.push({ line, message: 'must be "<hosts> <type> <base64> [comment]"' });
      return;
    }
    const key = checkHostKey(type, base64);
    if ('problem' in key) {
      problems.push({ line, message: key.problem });
      return;
    }
    entries.push({ line, hosts, key: marker ? { ...key, marker } : key });
  });
  return { entries, problems };
}

/** The name a host is known by in known_hosts: the host itself on port 22, `[host]:port` on any other. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;
}

/**
 * A known_hosts file's entries, indexed once: plain names in a map, pattern lines compiled, hashed names kept
 * to be tried one by one (each salted HMAC-SHA1 can only be checked against a given name).
 */
export class KnownHosts {
  private readonly exact = new Map<string, HostKey[]>();
  private readonly patterns: Array<{ positive: RegExp[]; negative: RegExp[]; key: HostKey }> = [];
  private readonly hashed: Array<{ salt: Buffer; hash: Buffer; key: HostKey }> = [];

  constructor(entries: readonly KnownHostsEntry[]) {
    for (const { hosts, key } of entries) {
      if (hosts.startsWith('|1|')) {
        const [, , salt, hash] = hosts.split('|');
        if (salt && hash) this.hashed.push({ salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64'), key });
        continue;
      }
      const names = hosts.toLowerCase().split(',');
      if (names.every((name) => !/[*?!]/.test(name))) {
        for (const name of names) this.exact.set(name, [...(this.exact.get(name) ?? []), key]);
        continue;
      }
      const positive = names.filter((name) => !name.startsWith('!')).map(globPattern);
      const negative = names.filter((name) => name.startsWith('!')).map((name) => globPattern(name.slice(1)));
      this.patterns.push({ positive, negative, key });
    }
  }

  /** The keys known for `host` on `port`. */
  keysOf(host: string, port: number): HostKey[] {
    const name = knownHostsName(host, port);
    const keys = [...(this.exact.get(name) ?? [])];
    for (const { positive, negative, key } of this.patterns) {
      if (positive.some((pattern) => pattern.test(name)) && !negative.some((pattern) => pattern.test(name))) keys.push(key);
    }
    for (const { salt, hash, key } of this.hashed) {
      const actual = createHmac('sha1', salt).update(name).digest();
      if (actual.length === hash.length && timingSafeEqual(actual, hash)) keys.push(key);
    }
    return keys;
  }
}

/** OpenSSH's match_pattern: `*` any run, `?` one character, case-insensitive (host names are lowercased). */
function globPattern(pattern: string): RegExp {
  const source = [...pattern].map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`, 's');
}
