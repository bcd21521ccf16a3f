import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { authClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

describe('server configuration', () => {
  const sqliteIn = (dir: string) => ({ client: 'sqlite', filename: path.join(dir, 'db.sqlite') });

  it('layers config/default.json < --config file < env < --port flag', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'config'));
    writeFileSync(path.join(dir, 'config', 'default.json'), JSON.stringify({ server: { base_url: '/from-default', port: 1 } }));
    const envPort = await freePort();

    const fileWins = await startGateway({ cwd: dir, config: { db: sqliteIn(dir), server: { base_url: '/from-file', port: 0 } } });
    expect(fileWins.base).to.match(/\/from-file$/);
    await fileWins.stop();

    const envWins = await startGateway({ cwd: dir, config: { db: sqliteIn(dir), server: { port: 2 } }, env: { TKGATE_PORT: String(envPort) } });
    expect(envWins.port).to.equal(envPort);
    expect(envWins.base).to.match(/\/from-default$/);
    await envWins.stop();

    const flagPort = await freePort();
    const flagWins = await startGateway({ cwd: dir, config: { db: sqliteIn(dir) }, env: { TKGATE_PORT: '3' }, extraArgs: ['--port', String(flagPort)] });
    expect(flagWins.port).to.equal(flagPort);
    await flagWins.stop();
  });

  it('takes durations as "500ms", "45s", "30m", "2h" or a number of seconds', async function () {
    this.timeout(120_000); // five gateways in turn: minutes on a loaded machine
    const dir = tempDir();
    const db = sqliteIn(dir);
    const added = await runCli(['user', 'add', 'tess', '--password-stdin', '--config', writeConfig({ db }, tempDir())], { stdin: 'tess-password\n' });
    expect(added.code, added.stderr).to.equal(0);
    const cases: Array<[string | number, number]> = [
      ['2h', 7_200_000],
      ['30m', 1_800_000],
      ['45s', 45_000],
      [90, 90_000],
      ['1500ms', 1_500],
    ];
    for (const [idle, expectedMs] of cases) {
      const gateway = await startGateway({ cwd: dir, config: { db, sessions: { idle_timeout: idle } } });
      const before = Date.now();
      const reply = await authClient(gateway.base).login('tess', 'tess-password');
      await gateway.stop();
      expect(reply.status).to.equal(200);
      expect(reply.body.data.idle_timeout_s, String(idle)).to.equal(Math.round(expectedMs / 1000));
      expect(Date.parse(reply.body.data.expires_at) - before, String(idle)).to.be.within(expectedMs - 50, expectedMs + 1000);
    }
  });

  const refusals: Array<[string, Record<string, unknown>, Record<string, string>, RegExp]> = [
    ['a duration that is not one', { sessions: { idle_timeout: 'soon' } }, {}, /sessions\.idle_timeout: must be a duration/],
    ['a port out of range', { server: { port: 70000 } }, {}, /server\.port: must be a whole number from 0 to 65535/],
    ['an unknown key', { server: { colour: 'blue' } }, {}, /server\.colour/],
    ['a wrong db.client', { db: { client: 'oracle' } }, {}, /db\.client: must be one of/],
    ['mysql without a url', { db: { client: 'mysql' } }, {}, /db\.url: must be set/],
    ['postgres without a url', { db: { client: 'postgres' } }, {}, /db\.url: must be set when db\.client is postgres/],
    [
      'a mysql:// url for postgres',
      { db: { client: 'postgres', url: 'mysql://u@127.0.0.1:3306/x' } },
      {},
      /db\.url: must start with postgres:\/\/ when db\.client is postgres/,
    ],
    ['a bad value in an env var', {}, { TKGATE_MAX_SESSIONS: 'many' }, /sessions\.max_per_user/],
    ['a base_url with a trailing slash', { server: { base_url: '/api/' } }, {}, /server\.base_url/],
    ['an unknown rate-limit store', { rate_limits: { store: 'memcached' } }, {}, /rate_limits\.store: must be one of database, redis/],
    ['the redis store without a url', { rate_limits: { store: 'redis' } }, {}, /rate_limits\.redis_url: must be set when rate_limits\.store is redis/],
    ['a redis_url that is not one', { rate_limits: { store: 'redis', redis_url: 'http://x' } }, {}, /rate_limits\.redis_url: must be empty or a URL/],
    ['an unknown on_store_failure', { rate_limits: { on_store_failure: 'ignore' } }, {}, /rate_limits\.on_store_failure: must be one of deny, allow/],
    [
      'a runs.lost_after shorter than three heartbeats',
      { runs: { heartbeat: '2s', lost_after: '5s' } },
      {},
      /runs\.lost_after: must be at least 3 times runs\.heartbeat \(2s\)/,
    ],
    ['a tracing.sample_ratio above 1', { tracing: { sample_ratio: 1.5 } }, {}, /tracing\.sample_ratio: must be a number from 0 to 1/],
    [
      'a tracing.endpoint that is not an http URL',
      { tracing: { endpoint: 'collector:4318' } },
      {},
      /tracing\.endpoint: must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      'a sample ratio in an env var that is not one',
      {},
      { TKGATE_TRACING_SAMPLE_RATIO: 'half' },
      /TKGATE_TRACING_SAMPLE_RATIO \(tracing\.sample_ratio\): must be a number from 0 to 1/,
    ],
  ];
  for (const [what, config, env, message] of refusals) {
    it(`refuses to start on ${what}, with one line naming the key`, async () => {
      const dir = tempDir();
      const file = writeConfig({ db: sqliteIn(dir), ...config }, dir);
      const result = await runCli(['start', '--config', file], { env, cwd: dir });
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal('');
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.match(message);
    });
  }

  it('refuses a --config file that does not exist, and a malformed one', async () => {
    const missing = await runCli(['start', '--config', '/nonexistent/tkgate.json']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/config file \/nonexistent\/tkgate\.json does not exist/);
    const dir = tempDir();
    writeFileSync(path.join(dir, 'broken.json'), '{"server": ');
    const broken = await runCli(['start', '--config', path.join(dir, 'broken.json')], { cwd: dir });
    expect(broken.code).to.equal(1);
    expect(broken.stderr.trim().split('\n')).to.have.length(1);
    expect(broken.stderr).to.match(/invalid configuration/);
  });

  it('names the file, line:column, key path and the nearest valid key of a mistyped key, and where a file does not parse', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'tkgate.yaml');
    writeFileSync(file, `db:\n  client: sqlite\n  filename: ${dir}/db.sqlite\nserver:\n  prot: 8081\nlogg:\n  level: info\nmetrics: { enabeld: false }\n`);
    const typo = await runCli(['config', 'check', '--config', file], { cwd: dir });
    expect(typo.code).to.equal(1);
    expect(typo.stderr).to.equal(
      `tkgate config check: invalid configuration: ${file}:5:3: server.prot: unknown key; did you mean server.port?; ` +
        `${file}:6:1: logg: unknown key; did you mean log?; ${file}:8:12: metrics.enabeld: unknown key; did you mean metrics.enabled?\n`,
    );
    const json = path.join(dir, 'broken.json');
    writeFileSync(json, '{\n  "server": {"port": 8080,}\n}\n');
    const broken = await runCli(['config', 'check', '--config', json], { cwd: dir });
    expect(broken.stderr).to.equal(
      `tkgate config check: invalid configuration: ${json}:2:27: not valid JSON: expected a key in double quotes, found "}"; remove the comma before it: JSON allows no trailing comma\n`,
    );
  });

  it('reads a YAML configuration file by its extension', async () => {
    const dir = tempDir();
    const gateway = await startGateway({ cwd: dir, format: 'yaml', config: { db: sqliteIn(dir), server: { port: 0, base_url: '/from-yaml' } } });
    await gateway.stop();
    expect(gateway.base).to.match(/\/from-yaml$/);
  });

  it('refuses a configuration file that is neither JSON nor YAML by extension', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'tkgate.conf'), '{}');
    const result = await runCli(['start', '--config', path.join(dir, 'tkgate.conf')], { cwd: dir });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/tkgate\.conf: must end in \.json, \.yaml or \.yml\n$/);
  });

  describe('booleans from the environment', () => {
    /** Three wrong passwords from three X-Forwarded-For addresses: the third is 429 unless the header is trusted. */
    async function thirdFailureStatus(env: Record<string, string>): Promise<number> {
      const dir = tempDir();
      const db = sqliteIn(dir);
      const added = await runCli(['user', 'add', 'tess', '--password-stdin', '--config', writeConfig({ db }, tempDir())], { stdin: 'tess-password\n' });
      expect(added.code, added.stderr).to.equal(0);
      const gateway = await startGateway({ cwd: dir, env, config: { db, auth: { login_max_failures: 2 } } });
      try {
        const auth = authClient(gateway.base);
        let status = 0;
        for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) status = (await auth.login('tess', 'wrong', { 'x-forwarded-for': address })).status;
        return status;
      } finally {
        await gateway.stop();
      }
    }

    it('TKGATE_TRUST_PROXY=0 keeps X-Forwarded-For untrusted; =True trusts it', async function () {
      this.timeout(120_000); // two gateways in turn
      expect(await thirdFailureStatus({ TKGATE_TRUST_PROXY: '0' })).to.equal(429);
      expect(await thirdFailureStatus({ TKGATE_TRUST_PROXY: 'True' })).to.equal(401);
    });

    for (const [variable, value] of [
      ['TKGATE_TRUST_PROXY', 'no'],
      ['TKGATE_PERSIST_SESSIONS', 'off'],
      ['TKGATE_LOG_ACCESS', 'yes'],
    ]) {
      it(`refuses to start on ${variable}=${value}, with one line naming the variable`, async () => {
        const dir = tempDir();
        const result = await runCli(['start', '--config', writeConfig({ db: sqliteIn(dir), metrics: { port: 0 } }, dir)], {
          env: { [variable]: value! },
          cwd: dir,
        });
        expect(result.code).to.equal(1);
        expect(result.stdout).to.equal('');
        expect(result.stderr.trim().split('\n')).to.have.length(1);
        expect(result.stderr).to.include(`environment variable ${variable}`);
        expect(result.stderr).to.include('must be true, false, 1 or 0');
      });
    }
  });
});
