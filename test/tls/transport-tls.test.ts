import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  readerTransport,
  undiciTransport,
  UpstreamFailure,
  type UpstreamRequest,
  type UpstreamTls,
  type UpstreamTransport,
} from '@tkgate/plugin-http/upstream';
import { bodyOf } from '../support/upstream-bodies.js';
import { makeCertificates } from '../support/certificates.js';

/**
 * Each upstream transport on its own over TLS, in both modes (whole answers and streamed ones): the server
 * certificate verified against the given CA, a client certificate presented, SNI from server_name, and every
 * refusal a `connection` failure. The gateway-level runs are upstream-tls.test.ts.
 */
const certs = makeCertificates();
const transports: Array<[string, () => UpstreamTransport]> = [
  ['undici', undiciTransport],
  ['reader', readerTransport],
];
const BODY = JSON.stringify({ answered: true, blob: 'z'.repeat(200_000) });

/** An HTTPS upstream that requires a client certificate of the test CA and says whose it saw, and which SNI name. */
async function startMutualUpstream(pair: { cert: string; key: string }): Promise<{ url: string; close(): void }> {
  const server = https.createServer(
    { cert: readFileSync(pair.cert), key: readFileSync(pair.key), ca: certs.caPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BODY)) }).end(BODY));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/json`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** As upstream-tls.ts makes it: the id differs whenever the material does (it keys the transports' connection groups). */
const material = ({ ca, cert, key, servername }: Partial<UpstreamTls>): UpstreamTls => ({
  id: [ca && 'ca', cert && 'cert', key && 'key', servername].join(' '),
  ca,
  cert,
  key,
  servername,
});
const CLIENT = material({ ca: certs.caPem, cert: readFileSync(certs.client.cert), key: readFileSync(certs.client.key) });
const CA_ONLY = material({ ca: certs.caPem });

const requestTo = (url: string, tls: UpstreamTls | undefined, streamed: boolean): UpstreamRequest => {
  const controller = new AbortController();
  return {
    url,
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeoutMs: 5000,
    streamed,
    connectionGroup: tls?.id ?? 'none',
    caller: 1,
    tls,
    signal: controller.signal,
    whenClientGone: () => () => undefined,
  };
};

const reasonOf = (call: Promise<unknown>) =>
  call.then(
    () => 'answered',
    (err: unknown) => (err instanceof UpstreamFailure ? err.reason : `not an UpstreamFailure: ${String(err)}`),
  );

describe('upstream transports over TLS', () => {
  let byAddress: { url: string; close(): void };
  let byName: { url: string; close(): void };
  before(async () => {
    byAddress = await startMutualUpstream(certs.server);
    byName = await startMutualUpstream(certs.named);
  });
  after(() => {
    byAddress.close();
    byName.close();
  });

  for (const [name, make] of transports) {
    describe(name, () => {
      let transport: UpstreamTransport;
      before(() => (transport = make()));
      after(() => transport.close());

      for (const streamed of [false, true]) {
        const mode = streamed ? 'streamed' : 'whole';
        const call = (url: string, tls: UpstreamTls | undefined) =>
          streamed
            ? transport.post(requestTo(url, tls, true)).then(bodyOf)
            : transport.fetchWhole(requestTo(url, tls, false), 1_000_000).then((answer) => answer.body.toString());

        it(`${mode}: verifies against the CA and presents the client certificate`, async () => {
          expect(await call(byAddress.url, CLIENT)).to.equal(BODY);
          // Twice: the second on a kept connection.
          expect(await call(byAddress.url, CLIENT)).to.equal(BODY);
        });

        it(`${mode}: sends server_name as SNI and verifies the certificate against it`, async () => {
          expect(await call(byName.url, material({ ...CLIENT, servername: 'upstream.test' }))).to.equal(BODY);
          expect(await reasonOf(call(byName.url, CLIENT))).to.equal('connection');
        });

        it(`${mode}: fails with a connection failure without the CA, and without the client certificate`, async () => {
          expect(await reasonOf(call(byAddress.url, undefined))).to.equal('connection');
          expect(await reasonOf(call(byAddress.url, CA_ONLY))).to.equal('connection');
        });
      }
    });
  }
});
