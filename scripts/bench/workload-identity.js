// Scenario 11 of run.js: what a workload token (auth.jwt_issuers) costs per call against an API key of the same
// user, on one gateway, on GET /auth/status (where the credential check is most of the work). A loopback JWKS
// server in this process publishes an RS256 key; each connection sends one token, as a CI job reuses its own.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { apiKey, BENCH_USER, login, startTkgate } from './tkgate.js';

const ISSUER = 'https://ci.bench.example';

/** Rows for the scenario (the token's first: the goal is its CPU per call against the key's), and a stop function. */
export async function workloadIdentityRows({ config, row, track }) {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' };
  const jwks = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const withIssuer = config.replace(/\.json$/, '-jwt.json');
  const written = JSON.parse(readFileSync(config, 'utf8'));
  written.auth = {
    ...written.auth,
    jwt_issuers: [
      {
        name: 'ci',
        issuer: ISSUER,
        jwks_url: `http://127.0.0.1:${jwks.address().port}/jwks`,
        audience: 'tkgate',
        subjects: ['repo:bench/*'],
        user: BENCH_USER.username,
      },
    ],
  };
  writeFileSync(withIssuer, JSON.stringify(written, null, 2));
  const gateway = track(await startTkgate(withIssuer));
  const key = await apiKey(gateway.base, await login(gateway.base));
  const token = await new SignJWT({ sub: 'repo:bench/app:ref:refs/heads/main' })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' })
    .setIssuer(ISSUER)
    .setAudience('tkgate')
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  const status = (bearer) => ({ url: '/auth/status', headers: { authorization: `Bearer ${bearer}` } });
  return {
    rows: [row('workload token (JWT)', gateway, status(token)), row('API key', gateway, status(key))],
    stop: async () => {
      await gateway.stop();
      await new Promise((resolve) => jwks.close(resolve));
    },
  };
}
