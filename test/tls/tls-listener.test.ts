import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { expect } from 'chai';
import { makeCertificates, type CertificateFiles } from '../support/certificates.js';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { gatewayDefaults, startGateway, writeConfig } from '../support/gateway-process.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';

const certs = makeCertificates();

/** The files the gateway is configured with; tests replace them as an operator (or certbot) would. */
function liveFiles() {
  const dir = tempDir('tkgate-live-tls-');
  const files = { cert: path.join(dir, 'gateway.crt'), key: path.join(dir, 'gateway.key') };
  copyFileSync(certs.server.cert, files.cert);
  copyFileSync(certs.server.key, files.key);
  return files;
}

/** Replaces a file by rename, as certbot and Kubernetes secret updates do. */
function replace(target: string, content: Buffer | string): void {
  const next = `${target}.next`;
  writeFileSync(next, content);
  renameSync(next, target);
}

function install(files: { cert: string; key: string }, pair: CertificateFiles): void {
  replace(files.key, readFileSync(pair.key));
  replace(files.cert, readFileSync(pair.cert));
}

interface Answer {
  status: number;
  body: string;
  /** The certificate the gateway served on this connection. */
  fingerprint: string;
  /** The client side of the connection: the same port means the same (kept-alive) connection. */
  localPort: number;
}

/** GET over HTTPS trusting the test CA only, on the given agent (keep-alive) or a fresh connection. */
function get(url: string, agent?: https.Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = https.get(url, { ca: certs.caPem, agent: agent ?? false }, (response) => {
      const socket = response.socket as tls.TLSSocket;
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      const localPort = socket.localPort!;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body, fingerprint, localPort }));
    });
    request.on('error', reject);
  });
}

const healthz = (base: string) => `${new URL(base).origin}/healthz`;

describe(`TLS on the listener (${dialects[0]!.name})`, () => {
  const files = liveFiles();
  const s = withGateway(dialects[0]!, [], { server: { port: 0, tls: files } }, { process: true });

  it('serves HTTPS with the configured certificate, verified against the CA, and logs an https URL', async () => {
    expect(s.gateway.base).to.match(/^https:\/\/127\.0\.0\.1:\d+\/api$/);
    const answer = await get(healthz(s.gateway.base));
    expect(answer.status).to.equal(200);
    expect(JSON.parse(answer.body)).to.deep.equal({ status: 'ok' });
    expect(answer.fingerprint).to.equal(certs.server.fingerprint);
    const loaded = s.gateway.logs.find((line) => line.msg === 'tls certificate loaded');
    expect(loaded).to.include({ reason: 'start', fingerprint256: certs.server.fingerprint });
  });

  it('refuses TLS 1.1 (a client that offers at most 1.1 gets a protocol alert)', async () => {
    const { port } = new URL(s.gateway.base);
    const outcome = await new Promise<string>((resolve) => {
      // SECLEVEL=0 lets this client offer TLS 1.0 and 1.1 at all (OpenSSL 3 would not): the refusal is the gateway's.
      const socket = tls.connect({
        host: '127.0.0.1',
        port: Number(port),
        ca: certs.caPem,
        minVersion: 'TLSv1',
        maxVersion: 'TLSv1.1',
        ciphers: 'DEFAULT@SECLEVEL=0',
      });
      socket.on('secureConnect', () => {
        resolve(`connected with ${socket.getProtocol()}`);
        socket.destroy();
      });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(String(err.code)));
    });
    expect(outcome).to.equal('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    const modern = await get(healthz(s.gateway.base));
    expect(modern.status).to.equal(200);
  });

  /** A TLS 1.2 handshake offering only `cipher`: the suite agreed on, or the error code of the refusal. */
  function handshakeWith(cipher: string): Promise<string> {
    const { port } = new URL(s.gateway.base);
    return new Promise<string>((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port: Number(port),
        ca: certs.caPem,
        servername: 'localhost',
        maxVersion: 'TLSv1.2',
        ciphers: `${cipher}@SECLEVEL=0`,
      });
      socket.on('secureConnect', () => {
        resolve(socket.getCipher().name);
        socket.destroy();
      });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(String(err.code)));
    });
  }

  for (const [cipher, what] of [
    ['AES128-GCM-SHA256', 'static RSA key exchange (no forward secrecy)'],
    ['AES256-SHA', 'static RSA with CBC and SHA-1'],
    ['ECDHE-RSA-AES128-SHA', 'ECDHE with CBC and SHA-1'],
    ['ECDHE-RSA-AES256-SHA384', 'ECDHE with CBC and SHA-384'],
  ]) {
    it(`refuses a TLS 1.2 client that offers only ${cipher} (${what})`, async () => {
      expect(await handshakeWith(cipher!)).to.equal('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
    });
  }

  for (const cipher of ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305']) {
    it(`accepts a TLS 1.2 client that offers ${cipher} (ECDHE with an AEAD)`, async () => {
      expect(await handshakeWith(cipher)).to.equal(cipher);
    });
  }

  it('loads a replaced certificate for new connections while a kept-alive connection stays open and keeps working', async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await get(healthz(s.gateway.base), agent);
      expect(before.fingerprint).to.equal(certs.server.fingerprint);
      install(files, certs.server2);
      await eventually('a new connection gets the new certificate', async () => (await get(healthz(s.gateway.base))).fingerprint === certs.server2.fingerprint);
      const kept = await get(healthz(s.gateway.base), agent);
      expect([kept.status, kept.localPort, kept.fingerprint]).to.deep.equal([200, before.localPort, certs.server.fingerprint]);
      expect(s.gateway.logs.filter((line) => line.msg === 'tls certificate loaded').at(-1)).to.include({
        reason: 'file changed',
        fingerprint256: certs.server2.fingerprint,
      });
    } finally {
      agent.destroy();
    }
  });

  it('keeps the current certificate when the new one does not load, and says why in the log (no key material)', async () => {
    const current = (await get(healthz(s.gateway.base))).fingerprint;
    const other = current === certs.server.fingerprint ? certs.server2 : certs.server;
    const mine = current === certs.server.fingerprint ? certs.server : certs.server2;
    // The other certificate with this one's key: a pair that does not match.
    replace(files.cert, readFileSync(other.cert));
    const refused = await eventually('the refusal is logged', () =>
      s.gateway.logs.find((line) => line.msg === 'tls certificate not loaded; the previous one stays in use'),
    );
    expect(refused).to.include({ level: 'error', reason: 'file changed' });
    expect(String(refused.error)).to.include('key values mismatch');
    expect(s.gateway.output()).not.to.include('PRIVATE KEY');
    const after = await get(healthz(s.gateway.base));
    expect([after.status, after.fingerprint]).to.deep.equal([200, mine.fingerprint]);
    replace(files.cert, 'not a certificate\n');
    await eventually(
      'the second refusal is logged',
      () => s.gateway.logs.filter((line) => line.msg === 'tls certificate not loaded; the previous one stays in use').length >= 2,
    );
    expect((await get(healthz(s.gateway.base))).fingerprint).to.equal(mine.fingerprint);
    replace(files.cert, readFileSync(mine.cert));
  });

  it('reloads on SIGHUP', async () => {
    const current = (await get(healthz(s.gateway.base))).fingerprint;
    const next = current === certs.server.fingerprint ? certs.server2 : certs.server;
    install(files, next);
    s.gateway.child.kill('SIGHUP');
    const line = await eventually('a SIGHUP load is logged', () =>
      s.gateway.logs.find((record) => record.msg === 'tls certificate loaded' && record.reason === 'SIGHUP' && record.fingerprint256 === next.fingerprint),
    );
    expect(line).to.include({ cert: files.cert });
    expect((await get(healthz(s.gateway.base))).fingerprint).to.equal(next.fingerprint);
  });
});

describe(`TLS on the listener with server.workers: 2 (${dialects[0]!.name})`, () => {
  const files = liveFiles();
  const s = withGateway(dialects[0]!, [], { server: { port: 0, workers: 2, tls: files } });

  it('every worker loads a replaced certificate, and every worker reloads on SIGHUP', async () => {
    expect((await get(healthz(s.gateway.base))).fingerprint).to.equal(certs.server.fingerprint);
    install(files, certs.server2);
    const loadedBy = (reason: string, fingerprint: string) =>
      new Set(
        s.gateway.logs
          .filter((line) => line.msg === 'tls certificate loaded' && line.reason === reason && line.fingerprint256 === fingerprint)
          .map((line) => line.worker),
      );
    await eventually('both workers load the new certificate', () => loadedBy('file changed', certs.server2.fingerprint).size === 2);
    // New connections go to either worker: all of them get the new certificate.
    for (let i = 0; i < 6; i++) expect((await get(healthz(s.gateway.base))).fingerprint).to.equal(certs.server2.fingerprint);
    install(files, certs.server);
    s.gateway.child.kill('SIGHUP');
    await eventually('both workers reload on SIGHUP', () => loadedBy('SIGHUP', certs.server.fingerprint).size === 2);
    await eventually('new connections get the certificate again', async () => (await get(healthz(s.gateway.base))).fingerprint === certs.server.fingerprint);
  });
});

describe('TLS settings', () => {
  const sqliteIn = (dir: string) => ({ client: 'sqlite', filename: path.join(dir, 'db.sqlite') });

  it('takes the pair from TKGATE_TLS_CERT and TKGATE_TLS_KEY', async () => {
    const dir = tempDir();
    const gateway = await startGateway({
      cwd: dir,
      config: { db: sqliteIn(dir) },
      env: { TKGATE_TLS_CERT: certs.server.cert, TKGATE_TLS_KEY: certs.server.key },
    });
    try {
      expect(gateway.base).to.match(/^https:/);
      expect((await get(healthz(gateway.base))).fingerprint).to.equal(certs.server.fingerprint);
    } finally {
      await gateway.stop();
    }
  });

  const refusals: Array<[string, Record<string, string>, RegExp]> = [
    ['a certificate without its key', { TKGATE_TLS_CERT: certs.server.cert }, /server\.tls\.key: must be set with server\.tls\.cert/],
    ['a key without its certificate', { TKGATE_TLS_KEY: certs.server.key }, /server\.tls\.cert: must be set with server\.tls\.key/],
    [
      "a key that is not the certificate's",
      { TKGATE_TLS_CERT: certs.server.cert, TKGATE_TLS_KEY: certs.server2.key },
      /server\.tls: cannot load .*key values mismatch/,
    ],
    [
      'a certificate file that does not exist',
      { TKGATE_TLS_CERT: '/nonexistent/gateway.crt', TKGATE_TLS_KEY: certs.server.key },
      /server\.tls: cannot load .*ENOENT/,
    ],
  ];
  for (const [what, env, message] of refusals) {
    it(`refuses to start on ${what}, with one line naming the key`, async () => {
      const dir = tempDir();
      const result = await runCli(['start', '--config', writeConfig({ ...gatewayDefaults(), db: sqliteIn(dir) }, dir)], { env, cwd: dir });
      expect(result.code).to.equal(1);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.match(message);
      expect(result.stderr + result.stdout).not.to.include('PRIVATE KEY');
    });
  }
});
