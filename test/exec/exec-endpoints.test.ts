import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { alive, scriptWriter } from '../support/executables.js';
import { eventually } from '../support/eventually.js';
import { sleep } from '../support/fixtures.js';
import { toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { helperPids } from './helper-processes.js';

const work = tempDir('tkgate-exec-work-');
const script = scriptWriter('tkgate-exec-bin-');
const lastArg = script('last-arg', 'for a; do last=$a; done; printf "%s" "$last"');
const plain = script('plain', 'echo "plain text, not JSON"');
const failing = script('failing', 'echo "stderr secret: db password hunter2" >&2; exit 7');
const selfKill = script('self-kill', 'kill -TERM $$; sleep 1');
const spawner = script('spawner', 'sleep 30 & echo $! > "$PID_FILE"; sleep 30');
const chatty = script('chatty', 'head -c 2000000 /dev/zero | tr "\\000" a');
const showEnv = script('show-env', 'env');
const fromStdin = script('from-stdin', 'if [ "$1" = "-" ]; then arg=\'"-"\'; else arg="$1"; fi; printf \'{"arg":%s,"stdin":%s}\' "$arg" "$(cat)"');
const counted = script('counted', 'touch "$COUNT_DIR/$$"; sleep 0.2; n=$(ls "$COUNT_DIR" | wc -l); rm "$COUNT_DIR/$$"; printf "{\\"running\\":%s}" "$n"');
const countDir = path.join(work, 'running');
mkdirSync(countDir);
const marker = path.join(work, 'injected');

const exec = (pathName: string, command: unknown, extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method: ['GET', 'POST'],
  type: 'exec',
  command,
  timeout: '5s',
  ...extra,
});
const tools = {
  name: 'tools',
  type: 'app',
  endpoints: [
    exec('json', [lastArg, '--flag']),
    exec('text', [plain]),
    exec('fail', [failing]),
    exec('signal', [selfKill]),
    exec('timeout', [spawner], { timeout: '500ms', env: { PID_FILE: path.join(work, 'grandchild.pid') } }),
    exec('abandon', [spawner], { env: { PID_FILE: path.join(work, 'abandoned.pid') } }),
    exec('chatty', [chatty], { max_output_bytes: 1000 }),
    exec('env', [showEnv], { env: { GREETING: 'hello' }, cwd: work }),
    exec('missing', ['tkgate-no-such-program']),
    exec('shell', 'printf "%s" "$1" > /dev/null; printf "{\\"ok\\":true}"'),
    exec('shell-echo', 'printf "%s" "$1"'),
    exec('argv-echo', [lastArg]),
    exec('stdin', [fromStdin], { stdin: true }),
    exec('no-stdin', [lastArg]),
    exec('limited', [counted], { max_concurrency: 4, max_queue: 100, env: { COUNT_DIR: countDir } }),
    exec('shared-a', [counted], { max_concurrency: 6, max_queue: 100, env: { COUNT_DIR: path.join(work, 'shared') } }),
    exec('shared-b', [counted], { max_concurrency: 6, max_queue: 100, env: { COUNT_DIR: path.join(work, 'shared') } }),
    exec('tiny-queue', [counted], { max_concurrency: 2, max_queue: 3, env: { COUNT_DIR: path.join(work, 'tiny') } }),
  ],
};
mkdirSync(path.join(work, 'tiny'));
mkdirSync(path.join(work, 'shared'));

/** Where the context went: the argument count, stdin and TKGATE_CONTEXT (null when empty). */
const places = script('places', 's=$(cat); printf \'{"argc":%s,"stdin":%s,"env":%s}\' $# "${s:-null}" "${TKGATE_CONTEXT:-null}"');
/** `context:` in a file of its own: the other endpoints load on a gateway that does not know the key. */
const contexts = {
  name: 'contexts',
  type: 'app',
  endpoints: [
    exec('uptime', ['uptime'], { context: 'none' }),
    exec('argument', [places]),
    exec('stdin', [places], { context: 'stdin' }),
    exec('env', [places], { context: 'env', env: { TKGATE_CONTEXT: 'configured' } }),
    exec('none', [places], { context: 'none' }),
    exec('shell-none', 'printf \'{"argc":%s}\' $#', { context: 'none' }),
    exec('big-stdin', [places], { context: 'stdin' }),
  ],
};

/** Every dialect on the default spawner (the native helper when built), and the Node helpers on one dialect. */
const runs = [...dialects.map((dialect) => ({ dialect, spawner: 'auto' })), { dialect: dialects[0]!, spawner: 'node' }];
for (const { dialect, spawner } of runs) {
  describe(`exec endpoints (${dialect.name}, spawner ${spawner})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'yara', power: 3 }],
      { plugin_options: { '@tkgate/plugin-exec': { max_processes: 8, spawner } } },
      {
        toolkitsDir: toolkitDir({ 'tools.yaml': tools, 'contexts.yaml': contexts }),
        process: true, // the spawn helpers are found by the gateway's pid
      },
    );
    const client = async () => toolkitClient(s.gateway.base, await s.login('yara'));

    it('appends the context JSON as the last argument and answers JSON stdout as data', async () => {
      const reply = await (await client()).post('tools', 'json', { q: 'x' });
      expect(reply.status).to.equal(200);
      expect(reply.body.data).to.deep.equal({
        user_id: s.ids.yara,
        username: 'yara',
        power: 3,
        core_group_id: null,
        core_group_name: null,
        toolkit_group: null,
        request_id: reply.headers.get('x-request-id'),
        payload: { q: 'x' },
        db_context: {},
      });
    });

    it('answers other stdout as {"output": text}', async () => {
      const reply = await (await client()).get('tools', 'text');
      expect(reply.body.data).to.deep.equal({ output: 'plain text, not JSON\n' });
    });

    it('answers 500 exec_failed for a non-zero exit, a signal or a spawn failure; stderr only in the log', async () => {
      const c = await client();
      const fail = await c.get('tools', 'fail');
      expect(fail.status).to.equal(500);
      expect(fail.body.error).to.deep.equal({ code: 'exec_failed', message: 'the command failed', details: { reason: 'exit_code', exit_code: 7 } });
      expect(JSON.stringify(fail.body)).not.to.include('hunter2');
      await sleep(50);
      expect(s.gateway.logs.some((record) => record.msg === 'command stderr' && String(record.stderr).includes('hunter2'))).to.equal(true);
      const signal = await c.get('tools', 'signal');
      expect(signal.status).to.equal(500);
      expect(signal.body.error.details).to.deep.equal({ reason: 'signal' });
      const missing = await c.get('tools', 'missing');
      expect(missing.status).to.equal(500);
      expect(missing.body.error.details).to.deep.equal({ reason: 'spawn_failed' });
    });

    it("logs a command's failing exit as one warn line with its exit code, no error and no stack", async () => {
      const fail = await (await client()).get('tools', 'fail');
      const requestId = fail.headers.get('x-request-id');
      const lines = await eventually('the failed request logged', () => {
        const found = s.gateway.logs.filter((record) => record.request_id === requestId && record.msg === 'request failed');
        return found.length > 0 ? found : undefined;
      });
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include({ level: 'warn', status: 500, code: 'exec_failed' });
      expect(lines[0]!.details).to.deep.equal({ reason: 'exit_code', exit_code: 7 });
      expect(JSON.stringify(lines[0])).not.to.match(/stack|hunter2/);
    });

    it('context: none runs a command that takes no argument (uptime); stdin, env and argument put the context there only', async () => {
      const c = await client();
      const uptime = await c.get('contexts', 'uptime');
      expect(uptime.status, JSON.stringify(uptime.body)).to.equal(200);
      expect(uptime.body.data.output).to.match(/load average/);
      const argument = await c.post('contexts', 'argument', { n: 1 });
      expect([argument.body.data.argc, argument.body.data.stdin, argument.body.data.env]).to.deep.equal([1, null, null]);
      const stdin = await c.post('contexts', 'stdin', { n: 2 });
      expect([stdin.body.data.argc, stdin.body.data.stdin.payload, stdin.body.data.env]).to.deep.equal([0, { n: 2 }, null]);
      const env = await c.post('contexts', 'env', { n: 3 });
      expect([env.body.data.argc, env.body.data.stdin, env.body.data.env.payload]).to.deep.equal([0, null, { n: 3 }]);
      const none = await c.post('contexts', 'none', { n: 4 });
      expect(none.body.data).to.deep.equal({ argc: 0, stdin: null, env: null });
      const shell = await c.post('contexts', 'shell-none', { n: 5 });
      expect(shell.body.data).to.deep.equal({ argc: 0 });
      // On stdin alone a context has no argument's size limit.
      const big = 'x'.repeat(200_000);
      const large = await c.post('contexts', 'big-stdin', { big });
      expect([large.status, large.body.data.stdin?.payload.big === big]).to.deep.equal([200, true]);
    });

    it('kills the whole process group on timeout, leaving no orphan', async () => {
      rmSync(path.join(work, 'grandchild.pid'), { force: true });
      const started = Date.now();
      const reply = await (await client()).get('tools', 'timeout');
      expect(reply.status).to.equal(500);
      expect(reply.body.error.details).to.deep.equal({ reason: 'timeout' });
      expect(Date.now() - started).to.be.below(4000);
      const grandchild = Number(readFileSync(path.join(work, 'grandchild.pid'), 'utf8'));
      await sleep(100);
      expect(alive(grandchild)).to.equal(false);
    });

    it('kills the process group when the client goes away', async () => {
      const token = await s.login('yara');
      const controller = new AbortController();
      const request = fetch(`${s.gateway.base}/tk/app/tools/abandon`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal }).catch(
        () => 'aborted',
      );
      const pidFile = path.join(work, 'abandoned.pid');
      rmSync(pidFile, { force: true });
      for (let i = 0; i < 50 && !existsSync(pidFile); i++) await sleep(20);
      const grandchild = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(grandchild)).to.equal(true);
      controller.abort();
      expect(await request).to.equal('aborted');
      for (let i = 0; i < 40 && alive(grandchild); i++) await sleep(25);
      expect(alive(grandchild)).to.equal(false);
    });

    it('answers 500 exec_failed past max_output_bytes', async () => {
      const reply = await (await client()).get('tools', 'chatty');
      expect(reply.status).to.equal(500);
      expect(reply.body.error.details).to.deep.equal({ reason: 'output_too_large' });
    });

    it("gives the command only its configured environment plus PATH, TRACEPARENT (and the Node helpers' run mark), in its cwd", async () => {
      const output: string = (await (await client()).get('tools', 'env')).body.data.output;
      const names = output
        .trim()
        .split('\n')
        .map((line) => line.split('=')[0]);
      expect(output).to.include('GREETING=hello\n');
      expect(output).to.match(/^PATH=/m);
      expect(output).to.include(`PWD=${work}`);
      expect(output).to.match(/^TRACEPARENT=00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/m);
      // The Node helpers mark each run's processes (docs/toolkits.md); the native helper, a subreaper, needs no mark.
      // ("auto" falls back to the Node helpers where the native one was not built.)
      const native = spawner === 'auto' && existsSync(path.join(repoRoot, 'plugins/plugin-exec/native/build/tkgate-spawn-helper'));
      const allowed = ['GREETING', 'PATH', 'TRACEPARENT', 'PWD', 'SHLVL', 'OLDPWD', '_', ...(native ? [] : ['TKGATE_EXEC_RUN'])];
      expect(names.filter((name) => !allowed.includes(name!))).to.deep.equal([]);
    });

    it('never lets request data reach a shell: $(…), backticks and quotes stay data', async () => {
      const c = await client();
      const hostile = [`$(touch ${marker})`, `\`touch ${marker}\``, `"; touch ${marker}; echo "`, `'; touch ${marker}; '`, `\n touch ${marker}`];
      for (const value of hostile) {
        for (const endpoint of ['shell', 'shell-echo', 'argv-echo']) {
          const reply = await c.post('tools', endpoint, { value });
          expect(reply.status, `${endpoint} ${value}`).to.equal(200);
          if (endpoint !== 'shell') expect(reply.body.data.payload.value).to.equal(value);
        }
      }
      expect(existsSync(marker)).to.equal(false);
    });

    it("refuses a context over the per-argument limit without stdin (413: the client's mistake), and passes it on stdin with stdin: true", async () => {
      const c = await client();
      const big = 'x'.repeat(200_000);
      const refused = await c.post('tools', 'no-stdin', { big });
      expect(refused.status).to.equal(413);
      expect(refused.body.error.code).to.equal('context_too_large');
      expect(refused.body.error.details.limit_bytes).to.equal(131_071);
      expect(refused.body.error.details.context_bytes).to.be.above(200_000);
      const small = await c.post('tools', 'stdin', { n: 1 });
      expect(small.body.data.stdin.payload).to.deep.equal({ n: 1 });
      expect(small.body.data.arg.payload).to.deep.equal({ n: 1 });
      const large = await c.post('tools', 'stdin', { big });
      expect(large.status).to.equal(200);
      expect(large.body.data.arg).to.equal('-');
      expect(large.body.data.stdin.payload.big).to.equal(big);
    });

    it('runs 50 concurrent calls with at most max_concurrency (4) processes at once', async () => {
      const c = await client();
      const replies = await Promise.all(Array.from({ length: 50 }, () => c.get('tools', 'limited')));
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array(50).fill(200));
      const running = replies.map((reply) => reply.body.data.running as number);
      expect(Math.max(...running)).to.be.at.most(4);
      expect(Math.max(...running)).to.be.at.least(2);
      expect(readdirSync(countDir)).to.deep.equal([]);
    });

    it('holds all exec endpoints together to plugin_options max_processes (8)', async () => {
      const c = await client();
      const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => c.get('tools', i % 2 ? 'shared-a' : 'shared-b')));
      expect(replies.every((reply) => reply.status === 200)).to.equal(true);
      // Each endpoint alone may run 6; together they may not pass the global 8.
      expect(Math.max(...replies.map((reply) => reply.body.data.running as number))).to.be.at.most(8);
    });

    it('replaces a spawn helper that dies, failing only the runs it held', async () => {
      const helpers = await helperPids(s.gateway);
      expect(helpers.length).to.be.at.least(1);
      for (const pid of helpers) process.kill(pid, 'SIGKILL');
      await sleep(300);
      const reply = await (await client()).get('tools', 'text');
      expect(reply.status).to.equal(200);
      expect(s.gateway.logs.some((record) => record.msg === 'exec spawn helper exited; starting another')).to.equal(true);
    });

    it('answers 503 busy with Retry-After when the queue is full', async () => {
      const c = await client();
      const replies = await Promise.all(Array.from({ length: 20 }, () => c.get('tools', 'tiny-queue')));
      const statuses = replies.map((reply) => reply.status);
      expect(statuses.filter((status) => status === 200)).to.have.length(5);
      const busy = replies.filter((reply) => reply.status === 503);
      expect(busy).to.have.length(15);
      for (const reply of busy) {
        expect(reply.body.error.code).to.equal('busy');
        expect(reply.headers.get('retry-after')).to.equal('1');
      }
    });
  });
}
