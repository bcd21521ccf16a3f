import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { eventually } from '../support/ops.js';
import { repoRoot, tempDir, tkgateBin } from '../support/paths.js';

/** A TCP server that accepts and never says a word: a MySQL connect to it hangs, so `tkgate start` stays in start-up. */
async function silentServer(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** The pids of the processes whose command line contains `text` (none: []). */
function pidsWith(text: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when none matches
  }
}

/** `tkgate start` as a child (or another command); resolves its exit code and everything it printed. */
function startChild(config: string, cwd: string, command = [process.execPath, tkgateBin, 'start', '--config', config], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(command[0]!, command.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, output: () => output };
}

describe('start-up: signals, the start-up line and the toolkits directory', function () {
  this.timeout(60_000);
  let silent: Awaited<ReturnType<typeof silentServer>>;
  before(async () => (silent = await silentServer()));
  after(() => silent?.close());

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} during start-up (a database that never answers) exits 0; SIGHUP and SIGUSR2 before it do not kill`, async () => {
      const dir = tempDir();
      const url = `mysql://gate:pa55-secret@127.0.0.1:${silent.port}/tkgate`;
      const config = writeConfig({ db: { client: 'mysql', url }, toolkits: { dir }, metrics: { port: 0 }, server: { port: 0 } }, dir);
      const gateway = startChild(config, dir);
      await eventually('the starting line', () => gateway.output().includes('"msg":"starting"') || undefined);
      const starting = JSON.parse(
        gateway
          .output()
          .split('\n')
          .find((line) => line.includes('"msg":"starting"'))!,
      );
      expect(starting).to.deep.include({
        version: (await runCli(['--version'])).stdout.trim().split(' ')[1],
        config,
        database: `mysql://gate@127.0.0.1:${silent.port}/tkgate`,
      });
      gateway.child.kill('SIGHUP');
      gateway.child.kill('SIGUSR2');
      await eventually(
        'SIGHUP and SIGUSR2 logged',
        () => (/SIGHUP ignored/.test(gateway.output()) && /"signal":"SIGUSR2"/.test(gateway.output())) || undefined,
      );
      expect(gateway.child.exitCode).to.equal(null);
      gateway.child.kill(signal);
      expect(await gateway.exited).to.equal(0);
      expect(gateway.output()).to.include(`"msg":"stopped during start-up","signal":"${signal}"`);
      expect(gateway.output()).not.to.include('pa55-secret');
    });
  }

  it('logs version, config file, database without password, toolkits.dir and toolkits in the listening line', async () => {
    const dir = tempDir();
    const toolkits = path.join(dir, 'toolkits');
    mkdirSync(toolkits);
    writeFileSync(
      path.join(toolkits, 'hello.yaml'),
      'name: hello\ntype: app\nendpoints: [{ path: ping, method: GET, type: internal, pseudo_querys: [{ select: users, columns: [id] }] }]\n',
    );
    const db = path.join(dir, 'db.sqlite');
    const config = writeConfig({ db: { client: 'sqlite', filename: db }, toolkits: { dir: toolkits }, metrics: { enabled: false }, server: { port: 0 } }, dir);
    const gateway = startChild(config, dir);
    const line = await eventually('the listening line', () =>
      gateway
        .output()
        .split('\n')
        .find((text) => text.includes('"msg":"listening"')),
    );
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).to.equal(0);
    expect(JSON.parse(line)).to.deep.include({ version: '0.1.0', config, database: `sqlite:${db}`, toolkits_dir: toolkits, toolkits: ['hello'] });
    expect(gateway.output()).not.to.include('metrics listening');
  });

  it('refuses to start, and config check fails, on a toolkits.dir that does not exist: one line naming it', async () => {
    const dir = tempDir();
    const missing = path.join(dir, 'no-such-toolkits');
    const config = writeConfig({ db: { client: 'sqlite', filename: path.join(dir, 'db.sqlite') }, toolkits: { dir: missing }, metrics: { port: 0 } }, dir);
    const started = await runCli(['start', '--config', config], { cwd: dir });
    expect(started.code).to.equal(1);
    expect(started.stderr).to.equal(`tkgate start: toolkits.dir ${missing} does not exist\n`);
    const checked = await runCli(['config', 'check', '--config', config], { cwd: dir });
    expect(checked.code).to.equal(1);
    expect(checked.stderr).to.equal(`tkgate config check: toolkits.dir ${missing} does not exist\n`);
    expect(checked.stdout).to.equal('');
  });

  it('a metrics.port in use stops the start with one line naming metrics.port, TKGATE_METRICS_PORT and 0', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const dir = tempDir();
      const db = { client: 'sqlite', filename: path.join(dir, 'db.sqlite') };
      const config = writeConfig({ db, toolkits: { dir: tempDir('tkgate-toolkits-') }, metrics: { port }, server: { port: 0 } }, dir);
      const started = await runCli(['start', '--config', config], { cwd: dir });
      expect(started.code).to.equal(1);
      expect(started.stderr).to.include(`metrics.port ${port} on 127.0.0.1 is already in use`);
      expect(started.stderr).to.include('TKGATE_METRICS_PORT');
      expect(started.stderr).to.include('0 for any free port');
    } finally {
      taken.close();
    }
  });

  it('SIGTERM to `npm start` stops the gateway too (npm signals its script, which must be the gateway itself)', async () => {
    const dir = tempDir();
    const config = writeConfig({ db: { client: 'sqlite', filename: path.join(dir, 'db.sqlite') } }, dir);
    const env = { ...process.env, TKGATE_PORT: '0', TKGATE_METRICS_PORT: '0', npm_config_update_notifier: 'false' };
    const npm = startChild(config, repoRoot, ['npm', 'start', '--', '--config', config], env);
    await eventually('the listening line', () => npm.output().includes('"msg":"listening"') || undefined, 120_000);
    expect(pidsWith(config).length).to.be.greaterThan(1); // npm and the gateway
    npm.child.kill('SIGTERM');
    await npm.exited;
    try {
      await eventually('no process of this start is left', () => pidsWith(config).length === 0 || undefined);
    } finally {
      for (const pid of pidsWith(config)) process.kill(pid, 'SIGKILL'); // what the old start left running
    }
    expect(npm.output()).to.include('"msg":"stopped"');
  });

  it('config check FILE checks that one file', async () => {
    const dir = tempDir();
    const good = path.join(dir, 'good.yaml');
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(good, 'name: good\ntype: app\nendpoints: [{ path: ping, method: GET, type: exec, command: [/bin/true] }]\n');
    writeFileSync(bad, 'name: bad\ntype: app\nendpoints: [{ path: ping, method: GET, type: nope }]\n');
    const config = writeConfig({ db: { client: 'sqlite', filename: path.join(dir, 'db.sqlite') } }, dir);
    const ok = await runCli(['config', 'check', good, '--config', config], { cwd: dir });
    expect(ok.code, ok.stderr).to.equal(0);
    expect(ok.stdout).to.equal('1 file(s), toolkits: good: OK\n');
    const refused = await runCli(['config', 'check', bad, '--config', config], { cwd: dir });
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.match(/^bad\.yaml:3:46: endpoints\.0\.type \(GET ping\): unknown endpoint type nope/);
    expect(refused.stdout.trim().split('\n')).to.have.length(1);
  });
});
