import { createServer } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { addUsers, createTestbed, passwordOf, type Testbed } from '../support/fixtures.js';
import { dialects } from '../support/databases.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, call } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { providerEntry, RETURN_TO } from './sso-suite.js';

/** A loopback port nothing listens on: a provider that is down. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('single sign-on configuration', () => {
  const check = (config: Record<string, unknown>, env: Record<string, string> = {}) => {
    const dir = tempDir();
    return runCli(['migrate', '--config', writeConfig({ db: { client: 'sqlite', filename: path.join(dir, 'db.sqlite') }, ...config }, dir)], { env });
  };
  const withProvider = (entry: Record<string, unknown>) => ({ auth: { oidc: { providers: [entry] } } });
  const secret = { TKGATE_OIDC_CORP_CLIENT_SECRET: 's3cret-from-env' };

  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an issuer that is not a URL', { issuer: 'not a url' }, /auth\.oidc\.providers\.0\.issuer: must be an absolute/],
    [
      'a return_to with a query',
      { return_to: ['https://tools.example.org/after?x=1'] },
      /auth\.oidc\.providers\.0\.return_to\.0: must be an origin and a path prefix/,
    ],
    [
      'a rule with both equals and contains',
      { power: { rules: [{ claim: 'g', equals: 'a', contains: 'a', power: 5 }] } },
      /auth\.oidc\.providers\.0\.power\.rules\.0: needs exactly one/,
    ],
    ['an unknown key', { colour: 'blue' }, /auth\.oidc\.providers\.0: Unrecognized key: "colour"/],
    ['a bad provider name', { name: 'Corp Login' }, /auth\.oidc\.providers\.0\.name: must be 1-32 of lowercase/],
    ['an unknown token_endpoint_auth_method', { token_endpoint_auth_method: 'private_key_jwt' }, /auth\.oidc\.providers\.0\.token_endpoint_auth_method/],
  ];
  for (const [what, change, message] of refusals) {
    it(`refuses ${what}, naming the key path`, async () => {
      const result = await check(withProvider(providerEntry('https://login.example.org', change)), secret);
      expect(result.code).to.not.equal(0);
      expect(result.stderr).to.match(message);
      expect(result.stderr).not.to.include('s3cret');
    });
  }

  it('needs a client secret from the file or TKGATE_OIDC_<NAME>_CLIENT_SECRET, and never shows it', async () => {
    const missing = await check(withProvider(providerEntry('https://login.example.org')));
    expect(missing.code).to.not.equal(0);
    expect(missing.stderr).to.include('auth.oidc.providers.0.client_secret: must be set, or the environment variable TKGATE_OIDC_CORP_CLIENT_SECRET');
    const fromFile = await check(withProvider(providerEntry('https://login.example.org', { client_secret: 'in-the-file', return_to: 'nope' })));
    expect(fromFile.stderr).not.to.include('in-the-file');
    expect((await check(withProvider(providerEntry('https://login.example.org')), secret)).code).to.equal(0);
  });

  it('refuses two providers of one name, and a server.public_url with a path', async () => {
    const twice = await check({ auth: { oidc: { providers: [providerEntry('https://a.example.org'), providerEntry('https://b.example.org')] } } }, secret);
    expect(twice.stderr).to.match(/auth\.oidc\.providers\.1\.name: provider corp is listed twice/);
    const publicUrl = await check({ server: { public_url: 'https://gw.example.org/api' } });
    expect(publicUrl.stderr).to.match(/server\.public_url: must be empty or an origin/);
  });
});

for (const dialect of dialects) {
  describe(`a provider that is down at start (${dialect.name})`, function () {
    this.timeout(60_000);
    let bed: Testbed;
    let gateway: GatewayProcess;
    before(async () => {
      bed = await createTestbed(dialect);
      await addUsers(bed.db, [{ username: 'pat' }]);
      const issuer = `http://127.0.0.1:${await closedPort()}`;
      gateway = await startGateway({
        config: { db: bed.dbConfig, auth: { oidc: { providers: [providerEntry(issuer)] } } },
        env: { TKGATE_OIDC_CORP_CLIENT_SECRET: 'secret' },
      });
    });
    after(async () => {
      await gateway?.stop();
      await bed?.close();
    });

    it('does not stop the gateway: password login works, the provider is retried, its logins answer 503', async () => {
      expect((await authClient(gateway.base).login('pat', passwordOf('pat'))).status).to.equal(200);
      const login = await call('GET', `${gateway.base}/auth/oidc/corp/login?return_to=${encodeURIComponent(RETURN_TO)}`);
      expect(login.status).to.equal(503);
      expect(login.body.error.code).to.equal('unavailable');
      await eventually('a retry is logged', () => gateway.logs.filter((line) => line.msg === 'oidc provider not discovered; retrying').length >= 2);
    });
  });

  describe(`auth.password_login: false (${dialect.name})`, function () {
    this.timeout(60_000);
    let bed: Testbed;
    let gateway: GatewayProcess;
    before(async () => {
      bed = await createTestbed(dialect);
      await addUsers(bed.db, [{ username: 'pat' }]);
      gateway = await startGateway({ config: { db: bed.dbConfig, auth: { password_login: false } } });
    });
    after(async () => {
      await gateway?.stop();
      await bed?.close();
    });

    it('answers POST /auth/login with 403 password_login_disabled', async () => {
      const reply = await authClient(gateway.base).login('pat', passwordOf('pat'));
      expect(reply.status).to.equal(403);
      expect(reply.body.error.code).to.equal('password_login_disabled');
    });
  });
}
