/**
 * `upstream.tls` of an http endpoint (docs/toolkits.md, "type: http"): the CA that signs the upstream's certificate, a
 * client certificate and key (mTLS), and the name to send as SNI and verify the certificate against. Files
 * are relative to the toolkit file; they are read and checked when the file loads (`check`, so that
 * `tkgate config check` reports them with their key path) and kept for that version of the endpoint.
 * Verification is always on: there is no key that turns it off.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { createSecureContext, type ConnectionOptions } from 'node:tls';
import { z, type ConfigIssue } from '@tkgate/core';

const FILES = ['ca', 'cert', 'key'] as const;

export const upstreamTlsSchema = z
  .strictObject({
    ca: z
      .string()
      .min(1)
      .optional()
      .describe('PEM file of the CA(s) that sign the upstream certificate, instead of the default CAs (relative to the toolkit file).'),
    cert: z.string().min(1).optional().describe('PEM client certificate presented to the upstream (mTLS), with key (relative to the toolkit file).'),
    key: z.string().min(1).optional().describe('PEM private key of cert (relative to the toolkit file).'),
    server_name: z
      .string()
      .regex(/^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/, 'must be a DNS name')
      .optional()
      .describe("The name sent as SNI and that the upstream's certificate must carry, instead of the URL's host."),
  })
  .superRefine((tls, ctx) => {
    if (tls.cert !== undefined && tls.key === undefined)
      ctx.addIssue({ code: 'custom', path: ['key'], message: 'must be set with cert (the client certificate needs its key)' });
    if (tls.key !== undefined && tls.cert === undefined)
      ctx.addIssue({ code: 'custom', path: ['cert'], message: 'must be set with key (the key belongs to a client certificate)' });
  })
  .describe('TLS towards an https:// upstream: the server certificate is always verified.');

export type UpstreamTlsConfig = z.infer<typeof upstreamTlsSchema>;

/** What the transports connect with: the files' contents, and an id that differs whenever any of it does. */
export interface UpstreamTls {
  /** Part of the connection group: connections are never shared across different TLS credentials. */
  readonly id: string;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
}

/** tls.connect options of an upstream: verification on, TLS 1.2 or later, SNI from the config or the URL's name. */
export function tlsConnectOptions(tls: UpstreamTls | undefined, host?: string): ConnectionOptions {
  const servername = tls?.servername ?? (host === undefined || isIP(host) ? undefined : host);
  return { rejectUnauthorized: true, minVersion: 'TLSv1.2', ca: tls?.ca, cert: tls?.cert, key: tls?.key, ...(servername ? { servername } : {}) };
}

/** The TLS material of each endpoint version, read by `check` (keyed by its config's upstream object). */
const loaded = new WeakMap<object, UpstreamTls>();

/** The material `check` loaded for this upstream, or none when it has no `tls` key. */
export function tlsOf(upstream: { tls?: UpstreamTlsConfig | undefined }): UpstreamTls | undefined {
  if (!upstream.tls) return undefined;
  const tls = loaded.get(upstream);
  if (!tls) throw new Error('upstream.tls was not loaded by the check of its toolkit file');
  return tls;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Parses every certificate of a PEM file (openssl skips what it cannot read in a CA list, silently). */
function certificates(pem: Buffer): void {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE);
  if (!blocks) throw new Error('no PEM certificate in it');
  for (const block of blocks) new X509Certificate(block);
}

/** Reads and checks the files of `upstream.tls`; issues name their key (paths relative to the endpoint). */
export function loadUpstreamTls(upstream: { tls?: UpstreamTlsConfig | undefined }, urls: readonly string[], toolkitFile: string): ConfigIssue[] {
  const config = upstream.tls;
  if (!config) return [];
  const at = (key: string) => ['upstream', 'tls', key];
  if (!urls.every((url) => url.startsWith('https:'))) return [{ path: ['upstream', 'tls'], message: 'is only for https:// upstream URLs' }];
  const issues: ConfigIssue[] = [];
  const contents: Partial<Record<(typeof FILES)[number], Buffer>> = {};
  for (const key of FILES) {
    const name = config[key];
    if (name === undefined) continue;
    const file = path.resolve(path.dirname(toolkitFile), name);
    try {
      contents[key] = readFileSync(file);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
      issues.push({ path: at(key), message: `cannot read ${file}: ${reason}` });
    }
  }
  if (issues.length > 0) return issues;
  // Each part on its own first, so that the issue names the file at fault; then the pair together.
  const parts: Array<[string, () => void]> = [
    ['ca', () => contents.ca && certificates(contents.ca)],
    ['cert', () => contents.cert && certificates(contents.cert)],
    ['key', () => contents.key && createSecureContext({ key: contents.key })],
    ['key', () => contents.cert && createSecureContext({ cert: contents.cert, key: contents.key })],
  ];
  for (const [key, load] of parts) {
    try {
      load();
    } catch (err) {
      return [{ path: at(key), message: `does not load: ${(err as Error).message.replace(/^error:[0-9A-F]+:/, '')}` }];
    }
  }
  const hash = createHash('sha256');
  for (const part of [contents.ca, contents.cert, contents.key, config.server_name]) hash.update(part ?? '').update('\0');
  loaded.set(upstream, { id: hash.digest('hex'), ...contents, servername: config.server_name });
  return [];
}
