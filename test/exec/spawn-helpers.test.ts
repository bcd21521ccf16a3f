import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { alive, scriptWriter } from '../support/executables.js';
import { sleep } from '../support/fixtures.js';
import { toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const work = tempDir('tkgate-helpers-work-');
const script = scriptWriter('tkgate-helpers-bin-');
/** Prints the environment of every ancestor it can read, from its parent up to init. */
const ancestors = script('ancestors', [
  'pid=$PPID',
  'while [ -n "$pid" ] && [ "$pid" -gt 0 ]; do',
  '  echo "== $pid"',
  '  tr "\\000" "\\n" < /proc/$pid/environ 2>/dev/null',
  '  [ "$pid" -eq 1 ] && break',
  '  pid=$(sed -n "s/^PPid:[[:space:]]*//p" /proc/$pid/status)',
  'done',
].join('\n'));
const groupLeader = script('group-leader', 'sleep 60 & echo $! > "$PID_FILE"; wait');
const sixtyMb = script('sixty-mb', 'head -c 62914560 /dev/zero | tr "\\000" a');
const text = script('text', 'echo fine');
const pidFile = path.join(work, 'sleep.pid');

const SECRET = 'mysql://tkgate:hunter2-gateway-secret@127.0.0.1:3306/tkgate';
const exec = (pathName: string, command: string[], extra: Record<string, unknown> = {}) => ({ path: pathName, method: 'GET', type: 'exec', command, timeout: '30s', ...extra });
const helpers = {
  name: 'helpers',
  type: 'app',
  endpoints: [
    exec('ancestors', [ancestors], { env: { VISIBLE: 'yes' } }),
    exec('group', [groupLeader], { env: { PID_FILE: pidFile }, max_concurrency: 1 }),
    exec('sixty-mb', [sixtyMb], { max_output_bytes: 64 * 1024 * 1024 }),
    exec('text', [text]),
  ],
};


// The helpers are the plugin's own processes, not the database's: one dialect is enough.
describe(`exec spawn helpers (${dialects[0]!.name})`, () => {
  const s = withGateway(dialects[0]!, [{ username: 'yara', power: 3 }], {}, {
    toolkitsDir: toolkitDir({ 'helpers.yaml': helpers }),
    env: { TKGATE_DB_URL_PROBE: SECRET },
  });
  const client = async () => toolkitClient(s.gateway.base, await s.login('yara'));
  /** This gateway's helpers (other gateways on the machine have their own). */
  const helperPids = () => {
    const found = execFileSync('pgrep', ['-f', `spawn-helper(\\.js)? ${s.gateway.child.pid}$`]).toString().trim();
    return found.split('\n').map(Number);
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
    // The parent (a spawn helper) holds nothing but Node's IPC variables (and the PWD sh exports).
    const parentEnv = output.split(/^== \d+$/m)[1]!.trim().split('\n').map((line) => line.split('=')[0]);
    expect(parentEnv.filter((name) => !['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE', 'PWD'].includes(name!))).to.deep.equal([]);
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
    for (let i = 0; i < 400 && !existsSync(pidFile); i++) await sleep(25);
    const sleeper = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(sleeper)).to.equal(true);
    // Queued behind the running one (max_concurrency 1): admitted only once its place is free.
    const queued = c.get('helpers', 'group');
    for (const pid of helperPids()) process.kill(pid, 'SIGKILL');
    const failed = await running;
    expect(failed.status).to.equal(500);
    expect(failed.body.error).to.deep.include({ code: 'exec_failed', details: { reason: 'spawn_failed' } });
    // The place was freed only after the group died: the sleep the command started is gone already.
    expect(alive(sleeper)).to.equal(false);
    // The queued run got a new helper; stop it the same way a client leaving would (its sleep is 60 s).
    for (let i = 0; i < 400 && Number(readFileSync(pidFile, 'utf8')) === sleeper; i++) await sleep(25);
    const second = Number(readFileSync(pidFile, 'utf8'));
    expect(second).not.to.equal(sleeper);
    for (const pid of helperPids()) process.kill(pid, 'SIGKILL');
    expect((await queued).status).to.equal(500);
    expect(alive(second)).to.equal(false);
    expect((await c.get('helpers', 'text')).body.data).to.deep.equal({ output: 'fine\n' });
    expect(s.gateway.logs.filter((record) => record.msg === 'exec spawn helper exited; starting another').length).to.be.at.least(2);
  });
});
