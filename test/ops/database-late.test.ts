import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { expect } from 'chai';
import { dialects, type TestDatabase } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { gatewayDefaults, writeConfig } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { tempDir, tkgateBin } from '../support/paths.js';
import { freePort } from '../support/private-mariadb.js';

/** The database "comes up" on `port`: a TCP relay to the real server, opened when the test says so. */
function relayTo(target: URL, port: number): Promise<net.Server> {
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end);
    upstream.on('error', end);
  });
  return new Promise((resolve) => relay.listen(port, '127.0.0.1', () => resolve(relay)));
}

interface Started {
  child: ChildProcess;
  logs: Array<Record<string, unknown>>;
  exited: Promise<number | string>;
}

/** `tkgate start` as a process, its JSON log lines collected from the first (it does not listen at once). */
function startTkgate(config: Record<string, unknown>): Started {
  const dir = tempDir();
  const child = spawn(process.execPath, [tkgateBin, 'start', '--config', writeConfig(config, dir)], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.startsWith('{')) logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr!.resume();
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, logs, exited };
}

const mysqlTarget = dialects.find((dialect) => dialect.name === 'mysql');

describe('a database that is down at start is waited for', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  const running: ChildProcess[] = [];
  before(async function () {
    if (!mysqlTarget) this.skip();
    database = await mysqlTarget!.create();
  });
  after(async () => {
    for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
    await database?.drop();
  });

  /** The gateway's config with the database URL moved to `port`, where nothing listens yet. */
  const configOn = async (dbPort: number) => {
    const real = new URL(String(database.dbConfig.url));
    const moved = new URL(real);
    moved.port = String(dbPort);
    const port = await freePort();
    return { real, port, config: { ...gatewayDefaults(), db: { client: 'mysql', url: moved.toString() }, server: { port } } };
  };

  it('retries with a growing pause, each attempt logged, /healthz 200 and /readyz 503 meanwhile; then serves; SIGTERM exits 0', async () => {
    const dbPort = await freePort();
    const { real, port, config } = await configOn(dbPort);
    const gateway = startTkgate(config);
    running.push(gateway.child);
    const root = `http://127.0.0.1:${port}`;
    await eventually('two attempts logged', () =>
      gateway.logs.filter((line) => line.msg === 'database unreachable; retrying').length >= 2 ? true : undefined,
    );
    const attempts = gateway.logs.filter((line) => line.msg === 'database unreachable; retrying');
    expect(attempts[0]).to.include({ level: 'warn', attempt: 1 });
    expect(Number(attempts[1]!.retry_in_ms)).to.be.above(Number(attempts[0]!.retry_in_ms));
    expect(JSON.stringify(attempts)).to.include('ECONNREFUSED');
    const health = await call('GET', `${root}/healthz`);
    expect([health.status, health.body]).to.deep.equal([200, { status: 'ok' }]);
    const ready = await call('GET', `${root}/readyz`);
    expect([ready.status, ready.body.failing]).to.deep.equal([503, ['database', 'toolkits']]);
    const api = await call('GET', `${root}/api/auth/me`);
    expect([api.status, api.body.error?.code]).to.deep.equal([503, 'unavailable']);
    expect(gateway.child.exitCode).to.equal(null);

    const relay = await relayTo(real, dbPort);
    try {
      await eventually('listening once the database is there', () => (gateway.logs.some((line) => line.msg === 'listening') ? true : undefined), 60_000);
      const readyNow = await eventually('/readyz 200', async () => {
        const reply = await call('GET', `${root}/readyz`);
        return reply.status === 200 ? reply : undefined;
      });
      expect(readyNow.body.status).to.equal('ready');
      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).to.equal(0);
    } finally {
      relay.close();
    }
  });

  it('SIGTERM while it waits ends the start at once with exit code 0', async () => {
    const { port, config } = await configOn(await freePort());
    const gateway = startTkgate(config);
    running.push(gateway.child);
    await eventually('waiting', () => (gateway.logs.some((line) => line.msg === 'database unreachable; retrying') ? true : undefined));
    expect((await call('GET', `http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).to.equal(0);
  });
});
