import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { alive, scriptWriter } from '../support/executables.js';
import { eventually } from '../support/eventually.js';
import { passwordOf, sleep } from '../support/fixtures.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { argvOf, helperPids as helpersOf } from './helper-processes.js';

const work = tempDir('tkgate-helpers-work-');
const script = scriptWriter('tkgate-helpers-bin-');
/** Prints the environment of every ancestor it can read, from its parent up to init. */
const ancestors = script(
  'ancestors',
  [
    'pid=$PPID',
    'while [ -n "$pid" ] && [ "$pid" -gt 0 ]; do',
    '  echo "== $pid"',
    '  tr "\\000" "\\n" < /proc/$pid/environ 2>/dev/null',
    '  [ "$pid" -eq 1 ] && break',
    '  pid=$(sed -n "s/^PPid:[[:space:]]*//p" /proc/$pid/status)',
    'done',
  ].join('\n'),
);
const groupLeader = script('group-leader', 'sleep 60 & echo $! > "$PID_FILE"; wait');
/** A run's command and a child in its process group: both pids, once both run. */
const runLeader = script('run-leader', 'sleep 60 & echo "$$ $!" > "$PID_FILE"; wait');
/**
 * Looks everywhere a command can for the marker planted in the gateway's environment: its own environment
 * and argv, and the environment and argv of every process it can read (its ancestors among them). The
 * pattern's brackets keep the marker itself out of grep's own argv.
 */
const scan = script(
  'scan',
  [
    'pattern="[^[:cntrl:]]*marker-9b1e-passwor[d][^[:cntrl:]]*"',
    '{ env; printf "%s\\n" "$0" "$@"; } | grep -o -e "$pattern" | sed "s|^|self: |"',
    'grep -a -o -H -e "$pattern" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null',
    'true',
  ].join('\n'),
);
/** Double-forks a `sleep` daemon in a session of its own (out of the command's process group), then exits or sleeps. */
const daemonize = (name: string, after: string) => script(name, `( setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$PID_FILE" ); ${after}`);
const daemonThenExit = daemonize('daemon-then-exit', 'echo started');
const daemonThenSleep = daemonize('daemon-then-sleep', 'sleep 60');
/** The same daemon keeping the command's stdout open. */
const daemonHoldingStdout = script('daemon-holding-stdout', '( setsid sleep 60 & echo $! > "$PID_FILE" ); echo started');
const stalling = script('stalling', 'echo $$ > "$PID_FILE"; sleep 60');
const sixtyMb = script('sixty-mb', 'head -c 62914560 /dev/zero | tr "\\000" a');
const text = script('text', 'echo fine');
const pidFile = path.join(work, 'sleep.pid');
/** The pid the group leader wrote, once written whole: the shell creates the file before it writes the pid. */
const writtenPid = (): number | undefined => {
  const text = existsSync(pidFile) ? readFileSync(pidFile, 'utf8') : '';
  return /^\d+\n$/.test(text) ? Number(text) : undefined;
};

const SECRET = 'mysql://tkgate:hunter2-gateway-secret@127.0.0.1:3306/tkgate';
/** The gateway's own database URL (unused on SQLite, read all the same), its password a marker. */
const DB_URL_SECRET = 'mysql://tkgate:marker-9b1e-password@127.0.0.1:3306/tkgate';
const daemonPidFile = path.join(work, 'daemon.pid');
const stallPidFile = path.join(work, 'stall.pid');
const runPidFile = path.join(work, 'run.pids');
const exec = (pathName: string, command: string[], extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method: 'GET',
  type: 'exec',
  command,
  timeout: '30s',
  ...extra,
});
const helpers = {
  name: 'helpers',
  type: 'app',
  endpoints: [
    exec('ancestors', [ancestors], { env: { VISIBLE: 'yes' } }),
    exec('group', [groupLeader], { env: { PID_FILE: pidFile }, max_concurrency: 1 }),
    exec('sixty-mb', [sixtyMb], { max_output_bytes: 64 * 1024 * 1024 }),
    exec('text', [text]),
    exec('scan', [scan], { max_output_bytes: 64 * 1024 * 1024 }),
    exec('daemon', [daemonThenExit], { env: { PID_FILE: daemonPidFile } }),
    exec('daemon-timeout', [daemonThenSleep], { env: { PID_FILE: daemonPidFile }, timeout: '1s' }),
    exec('daemon-running', [daemonThenSleep], { env: { PID_FILE: daemonPidFile } }),
    exec('daemon-holding', [daemonHoldingStdout], { env: { PID_FILE: daemonPidFile }, timeout: '1s' }),
    exec('stall', [stalling], { env: { PID_FILE: stallPidFile }, timeout: '1s' }),
    exec('run', [runLeader], { method: 'POST', run: 'async', context: 'none', env: { PID_FILE: runPidFile } }),
  ],
};
/** Gone for good: not running, and reaped (no zombie left in /proc). */
const reaped = (pid: number) => !existsSync(`/proc/${pid}`);
/**
 * A daemon's end: the native helper, a subreaper, also reaps it; under the Node helpers it was re-parented
 * to init, whose reaping is the container's business (docs/operating.md), so a zombie counts as gone.
 */
const ended = (spawner: 'native' | 'node', pid: number) => (spawner === 'native' ? reaped(pid) : !alive(pid));

// The helpers are the plugin's own processes, not the database's: one dialect is enough.
for (const spawner of ['native', 'node'] as const) {
  describe(`exec spawn helpers, spawner ${spawner} (${dialects[0]!.name})`, () => {
    const s = withGateway(
      dialects[0]!,
      [{ username: 'yara', power: 3 }],
      { plugin_options: { '@tkgate/plugin-exec': { spawner } } },
      {
        toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
        env: { TKGATE_DB_URL_PROBE: SECRET, TKGATE_DB_URL: DB_URL_SECRET },
      },
    );
    const client = async () => toolkitClient(s.gateway.base, await s.login('yara'));
    /** This gateway's helpers (other gateways on the machine have their own), of this spawner only. */
    const helperPids = () => helpersOf(s.gateway, spawner);
    /** A gateway of the test's own on the suite's database, for a test that kills it, and its client. */
    const ownGateway = async () => {
      const gateway = await startGateway({
        config: {
          db: s.bed.dbConfig,
          toolkits: { dir: toolkitDir({ 'helpers.yaml': helpers }), watch: false },
          plugin_options: { '@tkgate/plugin-exec': { spawner } },
        },
      });
      return { gateway, c: toolkitClient(gateway.base, await loginToken(gateway.base, 'yara', passwordOf('yara'))) };
    };

    it('lets no ancestor a command can read hold the gateway environment', async () => {
      const reply = await (await client()).get('helpers', 'ancestors');
      expect(reply.status).to.equal(200);
      const output: string = reply.body.data.output;
      const chain = [...output.matchAll(/^== (\d+)$/gm)].map((match) => Number(match[1]));
      expect(chain.length, output).to.be.at.least(1);
      expect(chain).not.to.include(s.gateway.child.pid);
      expect(output).not.to.include('hunter2');
      expect(output).not.to.include('TKGATE_DB_URL_PROBE');
      // The parent is a spawn helper of this spawner, and its environment is empty (no shell started it to export PWD).
      expect(await helperPids()).to.include(chain[0]);
      const parentEnv = output
        .split(/^== \d+$/m)[1]!
        .trim()
        .split('\n')
        .map((line) => line.split('=')[0]);
      expect(parentEnv.filter((name) => name)).to.deep.equal([]);
    });

    it('answers a 60 MB output under a 64 MiB max_output_bytes without losing the helper', async () => {
      const reply = await (await client()).get('helpers', 'sixty-mb');
      expect(reply.status).to.equal(200);
      expect(reply.body.data.output).to.have.length(62914560);
      expect(s.gateway.logs.some((record) => record.msg === 'exec spawn helper exited; starting another')).to.equal(false);
    });

    it('a helper killed mid-run fails its run only once the process group is dead, and is replaced', async () => {
      rmSync(pidFile, { force: true });
      const c = await client();
      const running = c.get('helpers', 'group');
      for (let i = 0; i < 400 && writtenPid() === undefined; i++) await sleep(25);
      const sleeper = writtenPid()!;
      expect(alive(sleeper)).to.equal(true);
      // Queued behind the running one (max_concurrency 1): admitted only once its place is free.
      const queued = c.get('helpers', 'group');
      for (const pid of await helperPids()) process.kill(pid, 'SIGKILL');
      const failed = await running;
      expect(failed.status).to.equal(500);
      expect(failed.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'spawn_failed' } });
      // The place was freed only after the group died: the sleep the command started is gone already.
      expect(alive(sleeper)).to.equal(false);
      // The queued run got a new helper; stop it the same way a client leaving would (its sleep is 60 s).
      for (let i = 0; i < 400 && (writtenPid() ?? sleeper) === sleeper; i++) await sleep(25);
      const second = writtenPid()!;
      expect(second, "the queued run's own sleep").to.be.a('number').and.not.equal(sleeper);
      for (const pid of await helperPids()) process.kill(pid, 'SIGKILL');
      expect((await queued).status).to.equal(500);
      expect(alive(second)).to.equal(false);
      expect((await c.get('helpers', 'text')).body.data).to.deep.equal({ output: 'fine\n' });
      expect(s.gateway.logs.filter((record) => record.msg === 'exec spawn helper exited; starting another').length).to.be.at.least(2);
    });

    it("lets a command find the secrets of the gateway's environment nowhere it can read, nor the gateway's pid in a helper's argv", async () => {
      const reply = await (await client()).get('helpers', 'scan');
      expect(reply.status).to.equal(200);
      expect(reply.body.data, 'where the marker was found').to.deep.equal({ output: '' });
      for (const pid of await helperPids()) expect(argvOf(pid)).not.to.include(String(s.gateway.child.pid));
    });

    // The native helper is a subreaper; the Node helpers (Node has no prctl) find the daemon by the run's
    // mark in its environment (TKGATE_EXEC_RUN, docs/toolkits.md).
    it('leaves nothing a command daemonised running, nor a zombie, after its run ends or times out', async () => {
      const c = await client();
      for (const [endpoint, status] of [
        ['daemon', 200],
        ['daemon-timeout', 500],
      ] as const) {
        rmSync(daemonPidFile, { force: true });
        const reply = await c.get('helpers', endpoint);
        expect(reply.status, endpoint).to.equal(status);
        if (status === 500) expect(reply.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'timeout' } });
        const daemon = Number(readFileSync(daemonPidFile, 'utf8'));
        await eventually(`the ${endpoint} daemon killed and reaped`, () => ended(spawner, daemon));
      }
    });

    it('answers a run whose daemon keeps its stdout open, without taking the helper for stalled', async () => {
      rmSync(daemonPidFile, { force: true });
      const reply = await (await client()).get('helpers', 'daemon-holding');
      const daemon = Number(readFileSync(daemonPidFile, 'utf8'));
      try {
        // The daemon is killed as the command exits, which ends its stdout.
        expect(reply.status).to.equal(200);
        expect(reply.body.data).to.deep.equal({ output: 'started\n' });
        await eventually('the daemon killed and reaped', () => ended(spawner, daemon));
        expect(s.gateway.logs.some((record) => record.msg === 'exec spawn helper did not answer in time; replacing it')).to.equal(false);
      } finally {
        if (alive(daemon)) process.kill(daemon, 'SIGKILL');
      }
    });

    it('answers a run whose helper stalls (SIGSTOP) as a timeout, and replaces the helper', async () => {
      rmSync(stallPidFile, { force: true });
      const c = await client();
      const running = c.get('helpers', 'stall');
      await eventually('the command started', () => existsSync(stallPidFile));
      const command = Number(readFileSync(stallPidFile, 'utf8'));
      // The helper running it is its parent; the other helpers go on serving.
      const parent = Number(/^PPid:\s*(\d+)$/m.exec(readFileSync(`/proc/${command}/status`, 'utf8'))![1]);
      expect(argvOf(parent)!.join(' ')).to.match(spawner === 'native' ? /tkgate-spawn-helper/ : /spawn-helper\.js/);
      const stopped = [parent];
      process.kill(parent, 'SIGSTOP');
      try {
        const reply = await Promise.race([running, sleep(25_000).then(() => undefined)]);
        expect(reply, 'an answer while the helper is stopped').not.to.equal(undefined);
        expect(reply!.status).to.equal(500);
        expect(reply!.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'timeout' } });
        await eventually('the command killed', () => !alive(command));
        await eventually('the stalled helpers killed', () => stopped.every((pid) => !alive(pid)));
        expect((await c.get('helpers', 'text')).body.data).to.deep.equal({ output: 'fine\n' });
        expect(s.gateway.logs.some((record) => record.msg === 'exec spawn helper did not answer in time; replacing it')).to.equal(true);
      } finally {
        for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });

    it('ends every command and its helpers when the gateway dies (SIGKILL: no goodbye)', async () => {
      rmSync(pidFile, { force: true });
      const { gateway, c } = await ownGateway();
      const running = c.get('helpers', 'group').catch(() => undefined);
      await eventually('the command started', () => writtenPid() !== undefined);
      const sleeper = writtenPid()!;
      const ownHelpers = await helpersOf(gateway, spawner);
      await gateway.stop('SIGKILL');
      await running;
      await eventually('the command group killed', () => !alive(sleeper));
      await eventually('the helpers exited', () => ownHelpers.every((pid) => !alive(pid)));
    });

    it("ends a run's command and its process group when the gateway dies (SIGKILL), which the gateway spawned itself", async () => {
      rmSync(runPidFile, { force: true });
      const { gateway, c } = await ownGateway();
      expect((await c.post('helpers', 'run', {})).status).to.equal(202);
      const pids = await eventually('the command and its child run', () => {
        const text = existsSync(runPidFile) ? readFileSync(runPidFile, 'utf8') : '';
        return /^\d+ \d+\n$/.test(text) ? text.trim().split(' ').map(Number) : undefined;
      });
      expect(pids.every(alive)).to.equal(true);
      await gateway.stop('SIGKILL');
      await eventually("the run's command and its child killed", () => pids.every((pid) => !alive(pid)));
    });

    it('ends what a running command daemonised when the gateway dies', async () => {
      rmSync(daemonPidFile, { force: true });
      const { gateway, c } = await ownGateway();
      const running = c.get('helpers', 'daemon-running').catch(() => undefined);
      await eventually('the daemon started', () => existsSync(daemonPidFile) && readFileSync(daemonPidFile, 'utf8').trim() !== '');
      const daemon = Number(readFileSync(daemonPidFile, 'utf8'));
      expect(alive(daemon)).to.equal(true);
      await gateway.stop('SIGKILL');
      await running;
      await eventually('the daemon killed and reaped', () => ended(spawner, daemon));
    });
  });
}

describe(`exec with server.workers: the configuration's variables withdrawn (${dialects[0]!.name})`, () => {
  const s = withDatabase(dialects[0]!, [{ username: 'yara', power: 3 }]);

  it('serves from workers configured by variables the primary withdrew, none of them left where a command can read', async () => {
    // The database only through the environment: a worker without it would open ./data/tkgate.sqlite, where yara is unknown.
    const gateway = await startGateway({
      config: { server: { port: 0, workers: 2 }, toolkits: { dir: toolkitDir({ 'helpers.yaml': helpers }), watch: false } },
      env: { TKGATE_DB_CLIENT: 'sqlite', TKGATE_DB_FILE: String(s.bed.dbConfig.filename), TKGATE_DB_URL: DB_URL_SECRET },
    });
    try {
      const c = toolkitClient(gateway.base, await loginToken(gateway.base, 'yara', passwordOf('yara')));
      // The scan reads every process: the primary and both workers.
      const reply = await c.get('helpers', 'scan');
      expect(reply.status).to.equal(200);
      expect(reply.body.data, 'where the marker was found').to.deep.equal({ output: '' });
    } finally {
      await gateway.stop();
    }
  });
});

describe(`exec spawner choice and fallback (${dialects[0]!.name})`, () => {
  const missing = path.join(work, 'no-such-helper');
  /** An executable that is no spawn helper: it exits without saying hello, as a helper that cannot run here would. */
  const broken = script('broken-helper', 'exit 0');
  const NOT_BUILT = 'exec native spawn helper not built; using the Node spawn helpers';
  const DID_NOT_START = 'exec native spawn helper did not start; using the Node spawn helpers';

  describe('spawner auto, the native helper not built', () => {
    const s = withGateway(
      dialects[0]!,
      [{ username: 'yara', power: 3 }],
      {},
      {
        toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
        env: { TKGATE_EXEC_NATIVE_HELPER: missing },
      },
    );

    it('runs commands on the Node helpers, saying so once in the log, also after a helper is replaced', async () => {
      const c = toolkitClient(s.gateway.base, await s.login('yara'));
      expect((await c.get('helpers', 'text')).body.data).to.deep.equal({ output: 'fine\n' });
      const first = await helpersOf(s.gateway, 'node');
      expect(first.length).to.be.at.least(1);
      for (const pid of first) process.kill(pid, 'SIGKILL');
      await eventually('the helpers replaced', () => s.gateway.logs.some((record) => record.msg === 'exec spawn helper exited; starting another'));
      expect((await c.get('helpers', 'text')).body.data).to.deep.equal({ output: 'fine\n' });
      const warnings = s.gateway.logs.filter((record) => record.msg === NOT_BUILT);
      expect(warnings).to.have.length(1);
      expect(warnings[0]!.binary).to.equal(missing);
    });
  });

  describe('spawner auto, a native helper that cannot run', () => {
    const s = withGateway(
      dialects[0]!,
      [{ username: 'yara', power: 3 }],
      {},
      {
        toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
        env: { TKGATE_EXEC_NATIVE_HELPER: broken },
      },
    );

    it('falls back to the Node helpers: runs it held fail as spawn_failed, later ones succeed, logged once', async () => {
      const c = toolkitClient(s.gateway.base, await s.login('yara'));
      const first = await c.get('helpers', 'text');
      if (first.status !== 200) expect(first.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'spawn_failed' } });
      await eventually('a run on the Node helpers', async () => (await c.get('helpers', 'text')).status === 200);
      expect((await helpersOf(s.gateway, 'node')).length).to.be.at.least(1);
      expect(s.gateway.logs.filter((record) => record.msg === DID_NOT_START)).to.have.length(1);
    });
  });

  describe('spawner auto, a native helper that talks nonsense', () => {
    /** Writes bytes that are no frame to its link, then lingers a little as a hung helper would. */
    const garbling = script('garbling-helper', 'printf "garbage!" >&3; sleep 2');
    const s = withGateway(
      dialects[0]!,
      [{ username: 'yara', power: 3 }],
      {},
      {
        toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
        env: { TKGATE_EXEC_NATIVE_HELPER: garbling },
      },
    );

    it('drops it (logged), keeps serving, and falls back to the Node helpers', async () => {
      const c = toolkitClient(s.gateway.base, await s.login('yara'));
      await eventually('a run on the Node helpers', async () => (await c.get('helpers', 'text')).status === 200);
      expect(s.gateway.logs.some((record) => record.msg === 'exec spawn helper sent a malformed frame')).to.equal(true);
      expect(s.gateway.logs.filter((record) => record.msg === DID_NOT_START)).to.have.length(1);
    });
  });

  describe('spawner native, a helper that cannot run', () => {
    const s = withGateway(
      dialects[0]!,
      [{ username: 'yara', power: 3 }],
      { plugin_options: { '@tkgate/plugin-exec': { spawner: 'native' } } },
      {
        toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
        env: { TKGATE_EXEC_NATIVE_HELPER: broken },
      },
    );

    it('fails each run as spawn_failed and restarts helpers only with runs, never in a loop', async () => {
      const c = toolkitClient(s.gateway.base, await s.login('yara'));
      for (let i = 0; i < 3; i++) {
        const reply = await c.get('helpers', 'text');
        expect(reply.status).to.equal(500);
        expect(reply.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'spawn_failed' } });
      }
      await sleep(1000);
      // Two helpers per run at most (the pool's size); a loop would have started hundreds meanwhile.
      const exits = s.gateway.logs.filter((record) => record.msg === 'exec spawn helper exited; starting another').length;
      expect(exits).to.be.at.most(6);
      expect(s.gateway.logs.some((record) => record.msg === DID_NOT_START)).to.equal(false);
    });
  });

  describe('spawner native, the helper not built', () => {
    const s = withDatabase(dialects[0]!, []);

    it('refuses to start, in one line naming the missing file', async () => {
      const config = writeConfig({
        db: s.bed.dbConfig,
        plugins: ['@tkgate/plugin-exec'],
        toolkits: { dir: toolkitDir({}), watch: false },
        server: { port: 0 },
        plugin_options: { '@tkgate/plugin-exec': { spawner: 'native' } },
      });
      const result = await runCli(['start', '--config', config], { env: { TKGATE_EXEC_NATIVE_HELPER: missing } });
      expect(result.code).to.equal(1);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.include(`spawner "native": ${missing} is missing or not executable`);
    });
  });
});
