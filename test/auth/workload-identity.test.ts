import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { call, toolkitClient, type Reply } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

/**
 * auth.jwt_issuers: machines call with the token their platform signed for them. A loopback JWKS server (with an
 * OpenID discovery document for one issuer, a bare jwks_url for the other) and tokens signed with jose: the
 * accepted algorithms, each refusal (401, the reason in the log only), the scope, status and audit, and a key
 * rotation under steady calls that fails none.
 */
interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}
async function signingKey(kid: string, alg: 'RS256' | 'ES256' | 'EdDSA'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

const rsa = await signingKey('rsa-1', 'RS256');
const rsaNext = await signingKey('rsa-2', 'RS256');
const ec = await signingKey('ec-1', 'ES256');
const ed = await signingKey('ed-1', 'EdDSA');
const stranger = await signingKey('rsa-1', 'RS256'); // the same kid as a published key, another key: a forged signature

/** What the issuers publish now (changed by the rotation test), and how often each was fetched. */
const published = { ci: [rsa.jwk], k8s: [ec.jwk, ed.jwk] };
const fetches = { discovery: 0, ci: 0, k8s: 0 };
const jwksServer = http.createServer((req, res): void => {
  const json = (value: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  if (req.url === '/ci/.well-known/openid-configuration') {
    fetches.discovery++;
    return void json({ issuer: CI_ISSUER, jwks_uri: `${origin}/ci/jwks` });
  }
  if (req.url === '/ci/jwks') {
    fetches.ci++;
    return void json({ keys: published.ci });
  }
  if (req.url === '/k8s/jwks') {
    fetches.k8s++;
    return void json({ keys: published.k8s });
  }
  res.writeHead(404).end();
});
await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => jwksServer.close(resolve)));
const origin = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
const CI_ISSUER = `${origin}/ci`;
const K8S_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const MAIN = 'repo:acme/app:ref:refs/heads/main';

const jwtIssuers = [
  { name: 'ci', issuer: CI_ISSUER, audience: 'tkgate', subjects: [MAIN, 'repo:acme/tools*'], user: 'ci-bot', toolkits: ['deploy'] },
  {
    name: 'k8s',
    issuer: K8S_ISSUER,
    jwks_url: `${origin}/k8s/jwks`,
    audience: ['https://tkgate.example'],
    subjects: ['system:serviceaccount:ops:*'],
    user: 'k8s-bot',
  },
];

interface Claims {
  iss?: string;
  aud?: string | string[];
  sub?: string;
  exp?: number;
  nbf?: number;
}
const now = () => Math.floor(Date.now() / 1000);
let serial = 0;
async function token(key: SigningKey, claims: Claims = {}, header: Record<string, unknown> = {}): Promise<string> {
  const body = { iss: CI_ISSUER, aud: 'tkgate', sub: MAIN, exp: now() + 300, jti: `t${serial++}`, ...claims };
  return new SignJWT(body)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
    .setIssuedAt()
    .sign(key.privateKey);
}
/** An unsigned token (`alg: none`), as an attacker would send it. */
function unsigned(claims: Claims = {}): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: CI_ISSUER, aud: 'tkgate', sub: MAIN, exp: now() + 300, ...claims })}.`;
}
/** HS256 signed with the issuer's public key as the HMAC secret: the classic algorithm-confusion forgery. */
async function hmacForgery(): Promise<string> {
  const secret = new TextEncoder().encode(JSON.stringify(rsa.jwk));
  return new SignJWT({ iss: CI_ISSUER, aud: 'tkgate', sub: MAIN, exp: now() + 300 }).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(secret);
}

const deploy = { name: 'deploy', type: 'app', audit: true, endpoints: [echoEndpoint({ audit_fields: ['target'] })] };
const other = { name: 'other', type: 'app', endpoints: [echoEndpoint()] };

for (const dialect of dialects) {
  describe(`workload identity: auth.jwt_issuers (${dialect.name})`, function () {
    this.timeout(120_000);
    // Each suite's gateway starts with the issuers' first keys (an earlier suite rotated them).
    let discoveriesBefore = 0;
    before(() => {
      published.ci = [rsa.jwk];
      discoveriesBefore = fetches.discovery;
    });
    const s = withGateway(
      dialect,
      [
        { username: 'root', power: 100 },
        { username: 'ci-bot', power: 10 },
        { username: 'k8s-bot', power: 20 },
      ],
      { auth: { jwt_issuers: jwtIssuers } },
      { toolkitsDir: toolkitDir({ 'deploy.yaml': deploy, 'other.yaml': other }) },
    );
    const echo = (bearer: string, toolkit = 'deploy', body: unknown = { target: 'web' }) => toolkitClient(s.gateway.base, bearer).post(toolkit, 'echo', body);
    const refusals = () => s.gateway.logs.filter((line) => line.msg === 'workload token refused');
    const expectRefused = async (reply: Reply, reason: RegExp) => {
      expect(reply.status, JSON.stringify(reply.body)).to.equal(401);
      expect(reply.body.error.code).to.equal('unauthorized');
      expect(JSON.stringify(reply.body)).not.to.match(reason);
      const line = await eventually(`a refusal line matching ${reason}`, () => refusals().find((record) => reason.test(String(record.reason))));
      expect(JSON.stringify(line)).not.to.include('eyJ');
    };

    it('lets a token of a listed subject call its scope as the configured user (RS256 via discovery)', async () => {
      const bearer = await token(rsa);
      const reply = await echo(bearer);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.data).to.include({ username: 'ci-bot', power: 10 });
      expect(fetches.discovery - discoveriesBefore).to.equal(1);
      const outside = await echo(bearer, 'other');
      expect(outside.status).to.equal(403);
      expect(outside.body.error.code).to.equal('forbidden');
      // A subject by its prefix, and the same token again (verified once, then cached).
      const tools = await token(rsa, { sub: 'repo:acme/tools-cli:ref:refs/tags/v1' });
      expect((await echo(tools)).status).to.equal(200);
      expect((await echo(tools)).status).to.equal(200);
    });

    it('accepts ES256 and EdDSA from a jwks_url, with a subject ending in *, no scope = every toolkit of the user', async () => {
      for (const key of [ec, ed]) {
        const bearer = await token(key, { iss: K8S_ISSUER, aud: ['https://tkgate.example', 'other'], sub: 'system:serviceaccount:ops:deployer' });
        const reply = await echo(bearer, 'other');
        expect(reply.status, `${key.alg}: ${JSON.stringify(reply.body)}`).to.equal(200);
        expect(reply.body.data.username).to.equal('k8s-bot');
      }
    });

    it('answers auth/status with kind jwt, the issuer name and the subject', async () => {
      const reply = await call('GET', `${s.gateway.base}/auth/status`, { token: await token(rsa) });
      expect(reply.status).to.equal(200);
      expect(reply.body.data).to.include({ active: true, kind: 'jwt', issuer: 'ci', subject: MAIN });
      expect(reply.body.data.user).to.include({ username: 'ci-bot' });
      expect(reply.body.data.scope).to.deep.equal(['deploy']);
    });

    it('records the audit actor jwt with the issuer name and subject', async () => {
      const reply = await echo(await token(rsa), 'deploy', { target: 'db-7' });
      expect(reply.status).to.equal(200);
      const event = await eventually('the call event', async () =>
        (await s.bed.db('audit_events').where({ toolkit: 'deploy', action: 'call' })).find((row) => String(row.details).includes('db-7')),
      );
      expect(event.actor).to.equal('jwt');
      expect(event.actor_user_id).to.equal(s.ids['ci-bot']);
      expect(JSON.parse(event.details)).to.deep.include({ issuer: 'ci', subject: MAIN, payload: { target: 'db-7' } });
    });

    it('refuses managing sessions and keys with 403, as for API keys', async () => {
      const bearer = await token(rsa);
      expect((await call('POST', `${s.gateway.base}/auth/logout`, { token: bearer })).status).to.equal(403);
      expect((await call('POST', `${s.gateway.base}/auth/api-keys`, { token: bearer, body: { name: 'x' } })).status).to.equal(403);
    });

    it('refuses wrong iss, wrong aud, expired, nbf ahead beyond the leeway, a subject outside the list: 401, the reason logged only', async () => {
      await expectRefused(await echo(await token(rsa, { iss: 'https://elsewhere.example' })), /no configured issuer/);
      await expectRefused(await echo(await token(rsa, { aud: 'someone-else' })), /aud names none/);
      await expectRefused(await echo(await token(rsa, { exp: now() - 120 })), /"exp" claim/);
      await expectRefused(await echo(await token(rsa, { nbf: now() + 120 })), /"nbf" claim/);
      await expectRefused(
        await echo(await token(rsa, { sub: 'repo:acme/app:ref:refs/heads/feature' })),
        /subject repo:acme\/app:ref:refs\/heads\/feature is not/,
      );
      await expectRefused(await echo(await token(rsa, { sub: 'repo:evil/tools' })), /subject repo:evil\/tools is not/);
      // A subject of the list's prefix holding a NUL (signed by the issuer): refused, never a database error.
      await expectRefused(await echo(await token(rsa, { sub: 'repo:acme/tools\u0000x' })), /sub holds a NUL character/);
      // Within the leeway, a clock a little ahead or behind is no failure.
      expect((await echo(await token(rsa, { nbf: now() + 30 }))).status).to.equal(200);
      expect((await echo(await token(rsa, { exp: now() - 30 }))).status).to.equal(200);
    });

    it('refuses alg none, HS256 with the public key as secret, and a forged signature', async () => {
      await expectRefused(await echo(unsigned()), /alg not allowed|Unsupported "alg"/);
      await expectRefused(await echo(await hmacForgery()), /alg not allowed/);
      await expectRefused(await echo(await token(stranger)), /signature verification failed/);
    });

    it('rotates keys under steady calls without a failed call', async () => {
      const replies: number[] = [];
      let signer = rsa;
      let running = true;
      const steady = (async () => {
        while (running) replies.push((await echo(await token(signer))).status);
      })();
      await eventually('calls with the old key', () => replies.length >= 5);
      // The issuer publishes its next key, then signs with it, then withdraws the old one.
      published.ci = [rsa.jwk, rsaNext.jwk];
      signer = rsaNext;
      const switched = replies.length;
      await eventually('calls with the new key', () => replies.length >= switched + 10);
      published.ci = [rsaNext.jwk];
      const withdrawn = replies.length;
      await eventually('more calls', () => replies.length >= withdrawn + 5);
      running = false;
      await steady;
      expect(replies.filter((status) => status !== 200)).to.deep.equal([]);
    });

    it('refuses a kid no key has, fetching the key set again at most once a minute', async () => {
      const unknown = await signingKey('never-published', 'RS256');
      const before = fetches.ci;
      for (let i = 0; i < 5; i++) await expectRefused(await echo(await token(unknown)), /no key of the issuer has this kid/);
      expect(fetches.ci - before).to.be.at.most(1);
    });
  });
}
