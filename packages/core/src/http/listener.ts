/**
 * The main listener: plain HTTP, or HTTPS when server.tls.cert and server.tls.key are set (docs/operating.md, "TLS").
 * The certificate is read again when either file changes (polled: a replace by rename, as certbot and
 * Kubernetes secrets do it, is seen too) and on SIGHUP (`reload`); `setSecureContext` applies it to new
 * handshakes while open connections keep theirs. A pair that does not load (a bad PEM, a key that does not
 * match) leaves the previous one in place, with an error line.
 */
import { X509Certificate } from 'node:crypto';
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { ConfigError, type ServerConfig } from '../config/server-config.js';
import type { Logger } from '../log.js';

/** TLS 1.0 and 1.1 are refused (RFC 8996). */
const MIN_VERSION = 'TLSv1.2';
/**
 * TLS 1.2 suites: ECDHE key exchange (forward secrecy) with an AEAD cipher only, as RFC 9325 section 4.2
 * recommends; static-RSA key exchange and CBC with SHA-1 or SHA-2 MACs are not offered. The TLS 1.3 suites
 * are Node's defaults (all three are AEAD), named here because this list replaces them otherwise.
 */
const CIPHERS = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');
/** How often the certificate files are looked at: a change is live within 5 s (docs/operating.md, "TLS") with room to settle. */
const POLL_MS = 1000;
/** Quiet time after a change before loading, so that a cert and a key replaced one after the other load as a pair. */
const SETTLE_MS = 500;

export interface Listener {
  readonly server: Server;
  readonly scheme: 'http' | 'https';
  /** Reads the certificate files again now (SIGHUP); a pair that does not load keeps the current one. */
  reloadCertificate(reason: string): Promise<void>;
  /** Stops watching the files (the server itself is closed by its drain). */
  close(): void;
}

type TlsFiles = ServerConfig['server']['tls'];

/** The pair as a secure context's options; throws with openssl's reason when it does not load. */
async function readPair(files: TlsFiles): Promise<{ options: SecureContextOptions; certificate: Record<string, string> }> {
  const [cert, key] = await Promise.all([readFile(files.cert), readFile(files.key)]);
  const options: SecureContextOptions = { cert, key, minVersion: MIN_VERSION, ciphers: CIPHERS };
  // Checks the PEM and that the key belongs to the certificate, before anything is served with it.
  createSecureContext(options);
  const leaf = new X509Certificate(cert);
  return { options, certificate: { fingerprint256: leaf.fingerprint256, subject: leaf.subject.replace(/\n/g, ', '), valid_to: leaf.validTo } };
}

export async function createListener(handler: RequestListener, files: TlsFiles, log: Logger): Promise<Listener> {
  if (!files.cert) return { server: createHttpServer(handler), scheme: 'http', reloadCertificate: async () => undefined, close: () => undefined };
  const first = await readPair(files).catch((err: Error) => {
    throw new ConfigError(`server.tls: cannot load ${files.cert} with ${files.key}: ${err.message}`);
  });
  const server = createHttpsServer(first.options, handler);
  log.info('tls certificate loaded', { reason: 'start', cert: files.cert, ...first.certificate });

  let loading = Promise.resolve();
  const reloadCertificate = (reason: string): Promise<void> => {
    loading = loading.then(async () => {
      try {
        const { options, certificate } = await readPair(files);
        server.setSecureContext(options);
        log.info('tls certificate loaded', { reason, cert: files.cert, ...certificate });
      } catch (err) {
        log.error('tls certificate not loaded; the previous one stays in use', { reason, cert: files.cert, key: files.key, error: (err as Error).message });
      }
    });
    return loading;
  };

  let settle: NodeJS.Timeout | undefined;
  const onChange = (current: Stats, previous: Stats) => {
    if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size) return;
    clearTimeout(settle);
    settle = setTimeout(() => void reloadCertificate('file changed'), SETTLE_MS);
    settle.unref();
  };
  for (const file of [files.cert, files.key]) watchFile(file, { interval: POLL_MS, persistent: false }, onChange);
  return {
    server,
    scheme: 'https',
    reloadCertificate,
    close: () => {
      clearTimeout(settle);
      for (const file of [files.cert, files.key]) unwatchFile(file, onChange);
    },
  };
}
