import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { call, toolkitClient, type Reply } from '../support/http.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';
import { writeConfig } from '../support/gateway-process.js';

/**
 * A planted secret: unique strings in the gateway's environment and in a file, used as an upstream header and as
 * an exec command's environment. Every surface is driven (logs at debug, the audit trail with audit_fields,
 * openapi.json, config check, the error answers of a failing upstream, spans sent to a loopback collector, exec
 * answers that print the values), and the strings appear nowhere, byte for byte; the upstream and the command
 * did get them.
 */
const ENV_SECRET = `planted-env-${randomBytes(12).toString('hex')}`;
const FILE_SECRET = `planted-file-${randomBytes(12).toString('hex')}`;
const ROTATED_SECRET = `planted-rotated-${randomBytes(12).toString('hex')}`;
const PLANTED = [ENV_SECRET, FILE_SECRET, ROTATED_SECRET];

const receiver: OtlpReceiver = await startOtlpReceiver();
after(() => receiver.close());

/** An upstream that keeps the headers it got; `/fail` answers 500 with them echoed in its body, as a careless service would. */
const heard: Array<http.IncomingHttpHeaders> = [];
const upstream = http.createServer((req, res) => {
  heard.push(req.headers);
  req.resume();
  req.on('end', () => {
    const status = req.url === '/fail' ? 500 : 200;
    const body = status === 200 ? { ok: true } : { ok: false, you_sent: req.headers };
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => upstream.close(resolve)));
const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const script = scriptWriter('tkgate-secret-bin-');
// Prints both values as JSON, as text, to stderr, and split over two writes.
const printsJson = script('prints-json', 'printf \'{"a":"%s","b":"%s"}\' "$TOKEN_A" "$TOKEN_B"; echo "stderr says $TOKEN_A" >&2');
const printsText = script('prints-text', 'printf "a=%s b=" "$TOKEN_A"; printf "%s\\n" "$TOKEN_B"');
const failsLoudly = script('fails-loudly', 'echo "failing with $TOKEN_A and $TOKEN_B" >&2; exit 3');

const headers = { 'X-Api-Key': { secret: 'env:PLANTED_API_KEY' }, Authorization: { secret: 'file:secrets/token.txt' } };
const env = { TOKEN_A: { secret: 'env:PLANTED_API_KEY' }, TOKEN_B: { secret: 'file:secrets/token.txt' } };
const vault = {
  name: 'vault',
  type: 'app',
  audit: true,
  endpoints: [
    {
      path: 'call',
      method: 'POST',
      type: 'http',
      audit_fields: ['note'],
      client_filter: { allowed_fields: ['note'] },
      upstream: { url: `${origin}/ok`, headers },
    },
    { path: 'fail', method: 'POST', type: 'http', upstream: { url: `${origin}/fail`, headers } },
    { path: 'nowhere', method: 'POST', type: 'http', upstream: { url: 'http://127.0.0.1:1/', headers, timeout: '2s' } },
    { path: 'json', method: 'POST', type: 'exec', command: [printsJson], env, audit_fields: ['note'] },
    { path: 'text', method: 'POST', type: 'exec', command: [printsText], env },
    { path: 'fails', method: 'POST', type: 'exec', command: [failsLoudly], env },
    { path: 'leaky', method: 'POST', type: 'internal', handler: 'leaky' },
    // A job: its output is stored and streamed, stderr included (docs/runs.md).
    { path: 'job', method: 'POST', type: 'exec', command: [printsJson], env, run: 'async' },
    { path: 'forwarded', method: 'GET', type: 'http', upstream: { url: `${origin}/ok`, forward: 'request', headers } },
    { path: 'fixture', method: 'POST', type: 'http', upstream: { url: `${origin}/ok`, headers: { 'X-Fixture': { secret: 'fixture:alpha' } } } },
    // One upstream call at a time, none queued: a place not given back would answer the next call 503 busy.
    {
      path: 'vault-down',
      method: 'POST',
      type: 'http',
      max_concurrency: 1,
      max_queue: 0,
      upstream: { url: `${origin}/ok`, headers: { 'X-Fixture': { secret: 'fixture:unreachable' } } },
    },
    {
      path: 'vault-down-forwarded',
      method: 'GET',
      type: 'http',
      max_concurrency: 1,
      max_queue: 0,
      upstream: { url: `${origin}/ok`, forward: 'request', headers: { 'X-Fixture': { secret: 'fixture:unreachable' } } },
    },
  ],
};

for (const dialect of dialects) {
  describe(`secrets kept outside toolkit files, planted and searched for [${dialect.name}]`, function () {
    this.timeout(180_000);
    const dir = toolkitDir({});
    // The file secret sits beside the toolkit file, in a directory the toolkit loader does not read.
    const secretFile = path.join(dir, 'secrets', 'token.txt');
    const s = withGateway(
      dialect,
      [{ username: 'root', power: 100 }],
      { log: { level: 'debug' }, tracing: { enabled: true, endpoint: receiver.url, service_name: `tkgate-secrets-${dialect.name}` } },
      { toolkitsDir: prepared(dir, secretFile), env: { PLANTED_API_KEY: ENV_SECRET } },
    );
    const surfaces: Array<{ what: string; text: () => string }> = [];
    const answer = (what: string, reply: Reply) => surfaces.push({ what, text: () => JSON.stringify(reply.body) + JSON.stringify([...reply.headers]) });

    it('hands the values to the upstream and the command, and masks what the command prints as ***', async () => {
      const tk = toolkitClient(s.gateway.base, await s.login('root'));
      const ok = await tk.post('vault', 'call', { note: 'audited note' });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect(heard.at(-1)!['x-api-key']).to.equal(ENV_SECRET);
      expect(heard.at(-1)!.authorization).to.equal(FILE_SECRET);
      answer('http answer', ok);

      const json = await tk.post('vault', 'json', { note: 'audited note' });
      expect(json.status).to.equal(200);
      expect(json.body.data).to.deep.equal({ a: '***', b: '***' });
      answer('exec JSON answer', json);
      const text = await tk.post('vault', 'text', {});
      expect(text.status).to.equal(200);
      expect(text.body.data).to.deep.equal({ output: 'a=*** b=***\n' });
      answer('exec text answer', text);

      const fixture = await tk.post('vault', 'fixture', {});
      expect(fixture.status).to.equal(200);
      expect(heard.at(-1)!['x-fixture'], "a plugin's scheme").to.equal('fixture-alpha-value');
    });

    it('answers every call whose secret cannot be read 500, and gives its upstream place back each time', async () => {
      const tk = toolkitClient(s.gateway.base, await s.login('root'));
      const before = heard.length;
      for (let i = 0; i < 3; i++) {
        for (const reply of [await tk.post('vault', 'vault-down', {}), await tk.get('vault', 'vault-down-forwarded')]) {
          expect(reply.status, `call ${i + 1}: ${JSON.stringify(reply.body)}`).to.equal(500);
          expect(reply.body.error.code).to.equal('internal_error');
        }
      }
      expect(heard.length, 'nothing reached the upstream').to.equal(before);
      await eventually('the cause in the log', () => s.gateway.output().includes('the fixture vault cannot be reached'));
    });

    it('answers a failing upstream, an unreachable one and a failing command without the values', async () => {
      const tk = toolkitClient(s.gateway.base, await s.login('root'));
      const failed = await tk.post('vault', 'fail', {});
      expect(failed.status).to.equal(502);
      expect(failed.body.error.code).to.equal('upstream_error');
      answer('502 of a failing upstream', failed);
      const nowhere = await tk.post('vault', 'nowhere', {});
      expect(nowhere.status).to.equal(502);
      answer('502 of an unreachable upstream', nowhere);
      // A plugin's error that quotes the value is answered with it masked.
      const leaky = await tk.post('vault', 'leaky', {});
      expect(leaky.status).to.equal(418);
      expect(leaky.body.error).to.include({ code: 'teapot', message: 'the key was ***' });
      expect(leaky.body.error.details).to.deep.equal({ key: '***' });
      answer('an error answer quoting the value', leaky);
      // A refused call is logged at debug level.
      expect((await toolkitClient(s.gateway.base, undefined).post('vault', 'call', {})).status).to.equal(401);
      const fails = await tk.post('vault', 'fails', {});
      expect(fails.status).to.equal(500);
      expect(fails.body.error.code).to.equal('exec_failed');
      answer('500 of a failing command', fails);
      // The stderr of the failing command is logged, masked.
      await eventually('the masked stderr line', () => s.gateway.logs.find((line) => String(line.stderr ?? '').includes('failing with *** and ***')));
    });

    it('uses a changed secret file for new calls', async () => {
      const tk = toolkitClient(s.gateway.base, await s.login('root'));
      writeFileSync(secretFile, `${ROTATED_SECRET}\n`);
      await eventually(
        'the new value at the upstream',
        async () => (await tk.post('vault', 'call', { note: 'after rotation' })).status === 200 && heard.at(-1)!.authorization === ROTATED_SECRET,
        20_000,
      );
      const text = await tk.post('vault', 'text', {});
      expect(text.body.data).to.deep.equal({ output: 'a=*** b=***\n' });
      answer('exec answer after rotation', text);
    });

    it("masks a job's stored and streamed output, and forwards a request with the values", async () => {
      const token = await s.login('root');
      const tk = toolkitClient(s.gateway.base, token);
      const started = await tk.post('vault', 'job', {});
      expect(started.status, JSON.stringify(started.body)).to.equal(202);
      const runId = started.body.data.run_id as string;
      const runUrl = `${s.gateway.base}/runs/${runId}`;
      const ended = await eventually(
        'the job ended',
        async () => {
          const run = await call('GET', runUrl, { token });
          return run.body.data?.status === 'succeeded' ? run : undefined;
        },
        60_000,
      );
      expect(ended.body.data.result).to.deep.equal({ a: '***', b: '***' });
      answer('a run', ended);
      const text = await fetch(`${runUrl}/output`, { headers: { authorization: `Bearer ${token}` } });
      const printed = await text.text();
      expect(printed).to.include('{"a":"***","b":"***"}').and.include('stderr says ***');
      surfaces.push({ what: "a run's output as text", text: () => printed });
      const streamed = await fetch(`${runUrl}/output`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
      const events = await streamed.text();
      expect(events).to.include('event: end');
      surfaces.push({ what: "a run's output as events", text: () => events });
      const stored = JSON.stringify([await s.bed.db('runs').select(), await s.bed.db('run_output').select()], (_key, value: unknown) =>
        Buffer.isBuffer(value) ? value.toString('utf8') : value,
      );
      surfaces.push({ what: 'the runs and run_output tables', text: () => stored });

      const forwarded = await tk.get('vault', 'forwarded', {});
      expect(forwarded.status).to.equal(200);
      expect(heard.at(-1)!['x-api-key']).to.equal(ENV_SECRET);
      expect(PLANTED).to.include(heard.at(-1)!.authorization);
    });

    it('describes the endpoints in openapi.json without the values', async () => {
      const openapi = await call('GET', `${s.gateway.base}/openapi.json`, { token: await s.login('root') });
      expect(openapi.status).to.equal(200);
      expect(JSON.stringify(openapi.body)).to.include('/tk/app/vault/call');
      answer('openapi.json', openapi);
    });

    it('keeps the values out of config check, which warns about a literal credential header', async () => {
      const checkDir = toolkitDir({
        'vault.yaml': vault,
        'literal.yaml': {
          name: 'literal',
          type: 'app',
          endpoints: [
            { path: 'x', method: 'POST', type: 'http', upstream: { url: `${origin}/ok`, headers: { 'X-Api-Key': ENV_SECRET, 'X-Trace-Tag': 'blue' } } },
          ],
        },
      });
      prepared(checkDir, path.join(checkDir, 'secrets', 'token.txt'));
      const config = writeConfig({ toolkits: { dir: checkDir }, plugins: pluginsWithTestFunctions, db: s.bed.dbConfig });
      const checked = await runCli(['config', 'check', '--config', config, checkDir], { env: { PLANTED_API_KEY: ENV_SECRET } });
      expect(checked.code, checked.stderr + checked.stdout).to.equal(0);
      const output = checked.stdout + checked.stderr;
      expect(output).to.match(/X-Api-Key/);
      expect(output).to.match(/credential/);
      expect(output).not.to.match(/X-Trace-Tag/);
      surfaces.push({ what: 'config check output', text: () => output.split(ENV_SECRET).join('<the literal the file itself holds>') });
      // The literal is the operator's own text in that file: what must hold is that check output never repeats it.
      expect(output.includes(ENV_SECRET), 'config check repeats a literal credential').to.equal(false);
    });

    it('finds the planted strings nowhere: logs (debug), audit rows, answers, openapi.json, config check, spans', async () => {
      // Spans of the calls above reach the collector.
      await eventually('spans exported', () => receiver.bodies.some((body) => body.includes(`tkgate-secrets-${dialect.name}`)), 30_000);
      await eventually('the audit events', async () => (await s.bed.db('audit_events').where({ toolkit: 'vault' })).length >= 4);
      const rows = await s.bed.db('audit_events').select();
      expect(JSON.stringify(rows)).to.include('audited note');
      const places = [
        ...surfaces,
        { what: 'gateway output at debug level', text: () => s.gateway.output() },
        { what: 'audit rows', text: () => JSON.stringify(rows) },
        { what: 'spans', text: () => receiver.bodies.join('\n') },
      ];
      for (const { what, text } of places) for (const planted of PLANTED) expect(text().includes(planted), `${what} holds a secret value`).to.equal(false);
      expect(s.gateway.output()).to.include('"level":"debug"');
    });
  });
}

/** Writes the secret file under `dir/secrets/` (created), and returns the directory. */
function prepared(dir: string, secretFile: string): string {
  writeToolkit(dir, 'vault.yaml', vault);
  mkdirSync(path.dirname(secretFile), { recursive: true });
  writeFileSync(secretFile, `${FILE_SECRET}\n`);
  return dir;
}
