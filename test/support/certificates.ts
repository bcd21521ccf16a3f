import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './paths.js';

/** A PEM certificate and its key, as files. */
export interface CertificateFiles {
  cert: string;
  key: string;
  /** SHA-256 fingerprint as node reports it (`AA:BB:…`), for comparing with `getPeerCertificate().fingerprint256`. */
  fingerprint: string;
}

/** A private CA and the certificates it signed, made with the real openssl in a temp directory of their own. */
export interface TestCertificates {
  dir: string;
  /** The CA's certificate (PEM file): what clients and upstream configurations trust. */
  ca: string;
  caPem: Buffer;
  /** Two server certificates for 127.0.0.1 and localhost (the second stands for a renewed one). */
  server: CertificateFiles;
  server2: CertificateFiles;
  /** A server certificate for the name `upstream.test` only (SNI and name checks). */
  named: CertificateFiles;
  /** A client certificate signed by the CA (mTLS). */
  client: CertificateFiles;
}

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

function signed(dir: string, name: string, subject: string, extensions: string): CertificateFiles {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.crt`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, extensions);
  openssl(dir, 'req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-subj', subject, '-out', `${name}.csr`);
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-extfile',
    ext,
    '-out',
    cert,
  );
  return { cert, key, fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

/** Makes the CA and its certificates (a few RSA keys: about a second). */
export function makeCertificates(): TestCertificates {
  const dir = tempDir('tkgate-certs-');
  openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=tkgate test CA');
  const serverExtensions =
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n';
  const ca = path.join(dir, 'ca.crt');
  return {
    dir,
    ca,
    caPem: readFileSync(ca),
    server: signed(dir, 'server', '/CN=tkgate test server', serverExtensions),
    server2: signed(dir, 'server2', '/CN=tkgate test server renewed', serverExtensions),
    named: signed(
      dir,
      'named',
      '/CN=upstream.test',
      'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:upstream.test\n',
    ),
    client: signed(dir, 'client', '/CN=tkgate test client', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n'),
  };
}
