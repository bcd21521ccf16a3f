// Peer: express-gateway 1.16 with key-auth (its own session-like credential check) in front of the
// upstream's POST /json. It keeps its users and keys in memory (emulated Redis). On start this script
// creates a consumer and a key through the admin API and prints `ready <port> <apiKey header value>`.
// PORT, ADMIN_PORT, UPSTREAM_PORT and DIR come from the environment.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { peersDir, requirePeer } from '../peers.js';

const dir = process.env.DIR;
mkdirSync(dir, { recursive: true });
cpSync(path.join(peersDir, 'node_modules/express-gateway/lib/config/models'), path.join(dir, 'models'), { recursive: true });
writeFileSync(
  path.join(dir, 'system.config.yml'),
  `db:
  redis:
    emulate: true
    namespace: EG
crypto:
  cipherKey: bench-only-key
  algorithm: aes256
  saltRounds: 10
session:
  secret: bench-only-secret
  resave: false
  saveUninitialized: false
accessTokens:
  timeToExpiry: 7200000
refreshTokens:
  timeToExpiry: 7200000
authorizationCodes:
  timeToExpiry: 300000
`,
);
writeFileSync(
  path.join(dir, 'gateway.config.yml'),
  `http:
  port: ${process.env.PORT}
  hostname: 127.0.0.1
admin:
  port: ${process.env.ADMIN_PORT}
  hostname: 127.0.0.1
apiEndpoints:
  json:
    host: '*'
    paths: '/json'
serviceEndpoints:
  upstream:
    url: 'http://127.0.0.1:${process.env.UPSTREAM_PORT}'
policies:
  - key-auth
  - proxy
pipelines:
  json:
    apiEndpoints: [json]
    policies:
      - key-auth:
      - proxy:
          action:
            serviceEndpoint: upstream
            changeOrigin: true
`,
);
await requirePeer('express-gateway')().load(dir).run();

const admin = `http://127.0.0.1:${process.env.ADMIN_PORT}`;
const post = async (route, body) => {
  const response = await fetch(`${admin}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`express-gateway admin ${route}: ${response.status} ${await response.text()}`);
  return response.json();
};
await post('/users', { username: 'bench', firstname: 'bench', lastname: 'bench' });
const key = await post('/credentials', { consumerId: 'bench', type: 'key-auth', credential: {} });
process.stdout.write(`ready ${process.env.PORT} apiKey ${key.keyId}:${key.keySecret}\n`);
