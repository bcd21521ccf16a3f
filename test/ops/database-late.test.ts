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

  /** What a waiting gateway answers: /healthz 200, /readyz 503 naming the database, anything else 503 `unavailable`. */
  const expectWaitingAnswers = async (root: string) => {
    const health = await call('GET', `${root}/healthz`);
    expect([health.status, health.body]).to.deep.equal([200, { status: 'ok' }]);
    const ready = await call('GET', `${root}/readyz`);
    expect([ready.status, ready.body.failing]).to.deep.equal([503, ['database', 'toolkits']]);
    const api = await call('GET', `${root}/api/auth/me`);
    expect([api.status, api.body.error?.code]).to.deep.equal([503, 'unavailable']);
  };

  /** The database comes up: the gateway serves (/readyz 200), then SIGTERM exits 0. */
  const expectServesOnceUp = async (gateway: Started, real: URL, dbPort: number, root: string) => {
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
    await expectWaitingAnswers(root);
    expect(gateway.child.exitCode).to.equal(null);
    await expectServesOnceUp(gateway, real, dbPort, root);
  });

  it('with server.workers 2: the workers answer /healthz 200 and /readyz 503 while the primary waits; then serve; SIGTERM exits 0', async () => {
    const dbPort = await freePort();
    const { real, port, config } = await configOn(dbPort);
    const gateway = startTkgate({ ...config, server: { ...config.server, workers: 2 } });
    running.push(gateway.child);
    const root = `http://127.0.0.1:${port}`;
    await eventually('two attempts logged', () =>
      gateway.logs.filter((line) => line.msg === 'database unreachable; retrying').length >= 2 ? true : undefined,
    );
    // Both workers listen on the one port while the primary waits.
    await eventually('both workers wait listening', () => {
      const waiting = gateway.logs.filter((line) => line.msg === 'waiting for the database; /healthz answers meanwhile');
      return new Set(waiting.map((line) => line.worker)).size === 2 ? true : undefined;
    });
    // Several rounds: the connections go to either worker.
    for (let i = 0; i < 3; i++) await expectWaitingAnswers(root);
    await expectServesOnceUp(gateway, real, dbPort, root);
  });

  it('with server.workers 2, SIGTERM while the primary waits ends the start with exit code 0, workers included', async () => {
    const { port, config } = await configOn(await freePort());
    const gateway = startTkgate({ ...config, server: { ...config.server, workers: 2 } });
    running.push(gateway.child);
    await eventually('waiting', () => (gateway.logs.some((line) => line.msg === 'database unreachable; retrying') ? true : undefined));
    await eventually('/healthz 200', async () =>
      (await call('GET', `http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined,
    );
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).to.equal(0);
    await eventually('the port is closed', async () =>
      (await call('GET', `http://127.0.0.1:${port}/healthz`).catch(() => 'closed')) === 'closed' ? true : undefined,
    );
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
