import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { call, loginToken, toolkitClient, type Reply } from '../support/http.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { startInProcess } from '../support/gateway-in-process.js';
import { passwordOf } from '../support/fixtures.js';
import { pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';
import { inventory, inventoryTables, now, PLANTED, seen } from './inventory-fixture.js';

/**
 * Parameters (docs/toolkits.md): a field's choices from another endpoint, asked as the caller (two callers with
 * different rows each see their own and are refused the other's), a cascade of two fields, a failing choices
 * endpoint (502 at the field), and a planted secret field value driven through every surface: it reaches the
 * command (which writes it to a file the test reads) and appears nowhere else.
 */
for (const dialect of dialects) {
  describe(`parameters: choices from endpoints and secret fields (${dialect.name})`, function () {
    this.timeout(120_000);
    const dir = toolkitDir({ 'inv.yaml': inventory });
    const s = withGateway(
      dialect,
      [
        { username: 'ana', power: 10 },
        { username: 'bob', power: 10 },
        { username: 'vic', power: 60 },
      ],
      { log: { level: 'debug' } },
      { toolkitsDir: dir, prepare: inventoryTables },
    );
    const surfaces: Array<{ what: string; text: () => string }> = [];
    const keep = (what: string, reply: Reply) => surfaces.push({ what, text: () => JSON.stringify(reply.body) });
    const choicesOf = async (token: string, query: string) => call('GET', `${s.gateway.base}/choices/inv/hosts/list?${query}`, { token });

    it("lists each caller's own choices, with labels, and refuses each the other's value (400 at the field)", async () => {
      const [ana, bob] = [await s.login('ana'), await s.login('bob')];
      const envs = await call('GET', `${s.gateway.base}/choices/inv/deploy?field=env`, { token: ana });
      expect(envs.status, JSON.stringify(envs.body)).to.equal(200);
      expect(envs.body.data.choices).to.deep.equal([
        { value: 'prod', label: 'Production' },
        { value: 'staging', label: 'Staging' },
      ]);
      const anas = await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host&env=prod`, { token: ana });
      expect(anas.body.data.choices).to.deep.equal([{ value: 'web-1', label: 'Web 1 (prod)' }]);
      const bobs = await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host&env=prod`, { token: bob });
      expect(bobs.body.data.choices).to.deep.equal([{ value: 'db-1', label: 'Database 1' }]);

      for (const [token, host] of [
        [ana, 'db-1'],
        [bob, 'web-1'],
      ] as const) {
        const refused = await toolkitClient(s.gateway.base, token).post('inv', 'now', { env: 'prod', host });
        expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
        expect(refused.body.error.code).to.equal('invalid_payload');
        expect(refused.body.error.details).to.deep.equal([{ field: 'host', rule: 'choices_from', message: 'host must be one of the choices of hosts/list' }]);
      }
      const own = await toolkitClient(s.gateway.base, bob).post('inv', 'now', { env: 'prod', host: 'db-1' });
      expect(own.status, JSON.stringify(own.body)).to.equal(200);
    });

    it('cascades: the second field’s choices depend on the first one’s value', async () => {
      const ana = await s.login('ana');
      const tk = toolkitClient(s.gateway.base, ana);
      const staging = await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host&env=staging`, { token: ana });
      expect(staging.body.data.choices).to.deep.equal([{ value: 'web-2', label: 'Web 2 (staging)' }]);
      expect((await tk.post('inv', 'now', { env: 'staging', host: 'web-1' })).status, 'a prod host in staging').to.equal(400);
      expect((await tk.post('inv', 'now', { env: 'staging', host: 'web-2' })).status).to.equal(200);
      const unknownEnv = await tk.post('inv', 'now', { env: 'moon', host: 'web-2' });
      expect(unknownEnv.status).to.equal(400);
      expect(unknownEnv.body.error.details.map((each: { field: string }) => each.field).sort()).to.deep.equal(['env', 'host']);
      const missing = await choicesOf(ana, 'field=env');
      expect(missing.status).to.equal(400);
      expect(missing.body.error.details[0]).to.include({ field: 'field', rule: 'choices_from' });
      const noArg = await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host`, { token: ana });
      expect(noArg.status).to.equal(400);
      expect(noArg.body.error.details[0]).to.include({ field: 'env', rule: 'required' });
      expect((await call('GET', `${s.gateway.base}/choices/inv/nowhere?field=host`, { token: ana })).body.error.code).to.equal('endpoint_not_found');
      expect((await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host&env=prod`)).status).to.equal(401);
    });

    it('keeps choices for `cache` per caller and args, and a reloaded toolkit asks anew', async () => {
      // Bob's staging hosts, asked here first: the list kept is this test's own (30 s, far longer than the test).
      const bob = await s.login('bob');
      const hosts = async () =>
        (await call('GET', `${s.gateway.base}/choices/inv/deploy?field=host&env=staging`, { token: bob })).body.data.choices.map(
          (choice: { value: string }) => choice.value,
        );
      expect(await hosts()).to.deep.equal([]);
      await s.bed.db('hosts').insert({ name: 'db-2', title: 'Database 2', env: 'staging', owner: 'bob' });
      expect(await hosts(), 'within cache: the kept list').to.deep.equal([]);
      const callNow = (host: string) => toolkitClient(s.gateway.base, bob).post('inv', 'now', { env: 'staging', host });
      expect((await callNow('db-2')).status, 'step 4 checks against the same list').to.equal(400);
      writeToolkit(dir, 'inv.yaml', { ...inventory, description: 'reloaded' });
      await eventually('the reloaded toolkit asks anew', async () => (await hosts()).includes('db-2'), 20_000);
      expect((await callNow('db-2')).status).to.equal(200);
    });

    it('answers 502 choices_failed naming the field when the choices endpoint fails, and goes on serving', async () => {
      const ana = await s.login('ana');
      const failed = await toolkitClient(s.gateway.base, ana).post('inv', 'broken', { site: 'x' });
      expect(failed.status, JSON.stringify(failed.body)).to.equal(502);
      expect(failed.body.error.code).to.equal('choices_failed');
      expect(failed.body.error.details[0]).to.include({ field: 'site', rule: 'choices_from' });
      expect(failed.body.error.details[0].message).to.match(/^site: its choices could not be read \(down answered 502 upstream_error\)$/);
      const listed = await call('GET', `${s.gateway.base}/choices/inv/broken?field=site`, { token: ana });
      expect(listed.status).to.equal(502);
      expect(listed.body.error.details[0].field).to.equal('site');
      expect((await toolkitClient(s.gateway.base, ana).post('inv', 'broken', {})).status, 'without the field: no choices asked').to.equal(200);
    });

    it('marks the fields in openapi.json: choices with their args, a secret as a password', async () => {
      const openapi = await call('GET', `${s.gateway.base}/openapi.json`, { token: await s.login('ana') });
      const properties = openapi.body.paths['/tk/app/inv/deploy'].post.requestBody.content['application/json'].schema.properties;
      expect(properties.host['x-tkgate-choices']).to.deep.equal({ endpoint: 'hosts/list', args: { env: 'env' } });
      expect(properties.env['x-tkgate-choices']).to.deep.equal({ endpoint: 'envs', args: {} });
      expect(properties.token).to.include({ format: 'password', writeOnly: true });
      const choices = openapi.body.paths['/choices/inv/deploy'].get;
      expect(choices.parameters.map((parameter: { name: string }) => parameter.name)).to.deep.equal(['field', 'env']);
      expect(choices.parameters[0].schema.enum).to.deep.equal(['env', 'host']);
      expect(Object.keys(choices.responses)).to.include.members(['200', '400', '502']);
      expect(Object.keys(openapi.body.paths['/tk/app/inv/deploy'].post.responses)).to.include('502');
      const checked = await validate(structuredClone(openapi.body) as Parameters<typeof validate>[0]);
      expect(checked.valid, JSON.stringify(checked)).to.equal(true);
      keep('openapi.json', openapi);
    });

    it('hands a secret field to the command only: *** in the run, approvals, the dry run, output, audit and answers', async () => {
      const [ana, vic] = [await s.login('ana'), await s.login('vic')];
      const asked = await toolkitClient(s.gateway.base, ana).post('inv', 'deploy', { env: 'prod', host: 'web-1', token: PLANTED });
      expect(asked.status, JSON.stringify(asked.body)).to.equal(202);
      keep('the 202', asked);
      const id = asked.body.data.run_id as string;
      const runUrl = `${s.gateway.base}/runs/${id}`;
      const pending = await eventually('the dry run ended', async () => {
        const run = await call('GET', runUrl, { token: vic });
        return run.body.data?.dry_run?.status === 'succeeded' ? run : undefined;
      });
      expect(pending.body.data.payload).to.deep.equal({ env: 'prod', host: 'web-1', token: '***' });
      expect(pending.body.data.dry_run.output).to.include('would deploy with').and.include('"token":"***"');
      keep("the approver's view", pending);
      const approvable = await call('GET', `${s.gateway.base}/runs?status=awaiting_approval&approvable=true`, { token: vic });
      expect(approvable.body.data.runs.map((run: { id: string }) => run.id)).to.include(id);
      keep('the approvals list', approvable);
      // Only the stored context of the waiting run holds it.
      const waiting = JSON.stringify(await s.bed.db('runs').where({ id }).select('context'));
      expect(waiting).to.include(PLANTED);

      const approved = await call('POST', `${runUrl}/approve`, { token: vic, body: { comment: 'go' } });
      expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
      keep('the approval', approved);
      const ended = await eventually('the run ended', async () => {
        const run = await call('GET', runUrl, { token: ana });
        return run.body.data?.status === 'succeeded' ? run : undefined;
      });
      keep('the ended run', ended);
      const file = path.join(seen, `${id}.json`);
      expect(existsSync(file)).to.equal(true);
      const context = JSON.parse(readFileSync(file, 'utf8'));
      expect(context.payload, 'the approved values, exactly').to.deep.equal({ env: 'prod', host: 'web-1', token: PLANTED });
      const output = await (await fetch(`${runUrl}/output`, { headers: { authorization: `Bearer ${ana}` } })).text();
      expect(output).to.include('deploying with').and.include('"token":"***"').and.include('stderr:');
      surfaces.push({ what: "the run's output", text: () => output });

      const sync = await toolkitClient(s.gateway.base, ana).post('inv', 'now', { env: 'prod', host: 'web-1', token: PLANTED });
      expect(sync.status).to.equal(200);
      expect(sync.body.data.output).to.include('"token":"***"');
      expect(JSON.parse(readFileSync(path.join(seen, 'now.json'), 'utf8')).payload.token).to.equal(PLANTED);
      keep('a sync answer', sync);
      // A refused call that carries it: the 400 does not repeat it.
      const refused = await toolkitClient(s.gateway.base, ana).post('inv', 'now', { env: 'prod', host: 'db-1', token: PLANTED });
      expect(refused.status).to.equal(400);
      keep('a 400', refused);

      await eventually('the audit events', async () => (await s.bed.db('audit_events').where({ toolkit: 'inv', endpoint: 'now' })).length >= 2);
      const audit = await s.bed.db('audit_events').select();
      expect(JSON.stringify(audit)).to.match(/token\\*":\\*"\*\*\*/);
      const stored = JSON.stringify([await s.bed.db('runs').select(), await s.bed.db('run_output').select(), audit], (_key, value: unknown) =>
        Buffer.isBuffer(value) ? value.toString('utf8') : value,
      );
      const places = [
        ...surfaces,
        { what: 'the runs, run_output and audit_events tables', text: () => stored },
        { what: 'gateway output at debug level', text: () => s.gateway.output() },
      ];
      for (const { what, text } of places) expect(text().includes(PLANTED), `${what} holds the secret field's value`).to.equal(false);
    });

    if (dialect.name === 'sqlite')
      it('refuses a choices_from naming no usable endpoint, and a secret concurrency key, at the key, with line and column', async () => {
        const bad = {
          name: 'bad',
          type: 'app',
          endpoints: [
            { path: 'run', method: 'POST', type: 'exec', command: [now] },
            {
              path: 'go',
              method: 'POST',
              type: 'exec',
              command: [now],
              client_filter: {
                field_rules: {
                  a: { choices_from: { endpoint: 'missing' } },
                  b: { choices_from: { endpoint: 'run' } },
                },
              },
            },
            {
              path: 'keyed',
              method: 'POST',
              type: 'exec',
              run: 'async',
              command: [now],
              concurrency_key: '$payload.token',
              client_filter: {
                field_rules: { token: { type: 'string', secret: true }, host: { choices_from: { endpoint: 'run', args: { t: '$payload.token' } } } },
              },
            },
            {
              path: 'self',
              method: 'POST',
              type: 'exec',
              command: [now],
              client_filter: { field_rules: { c: { choices_from: { endpoint: 'go', args: { x: '$payload.c' } } } } },
            },
          ],
        };
        const dir = toolkitDir({ 'bad.yaml': bad });
        const config = writeConfig({ toolkits: { dir }, plugins: pluginsWithTestFunctions, db: s.bed.dbConfig });
        const checked = await runCli(['config', 'check', '--config', config, dir]);
        const text = checked.stdout + checked.stderr;
        expect(checked.code, text).to.not.equal(0);
        expect(text).to.match(/endpoints\.1\.client_filter\.field_rules\.a\.choices_from\.endpoint/);
        expect(text).to.match(/this toolkit has no endpoint missing/);
        expect(text).to.match(/run runs a command/);
        expect(text).to.match(/field_rules\.c\.choices_from\.args\.x/);
        expect(text).to.match(/endpoints\.2\.concurrency_key .*token is a secret field/);
        expect(text).to.match(/endpoints\.2\.client_filter\.field_rules\.host\.choices_from\.args\.t .*token is a secret field/);
        expect(text).to.match(/bad\.yaml:\d+:\d+/);
      });
  });
}

/**
 * A run asked on one instance and started by another: the instance that starts it masks its secret field's value
 * too (it adds the values of the context it claims), so the run's output holds `***`, not the value.
 */
for (const dialect of dialects) {
  describe(`parameters: a secret field of a run started by another instance (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withDatabase(dialect, [
      { username: 'ana', power: 10 },
      { username: 'vic', power: 60 },
    ]);
    const gateways: GatewayProcess[] = [];
    const start = async () => {
      const gateway = await startInProcess({
        config: { db: s.bed.dbConfig, toolkits: { dir: toolkitDir({ 'inv.yaml': inventory }), watch: false }, plugins: pluginsWithTestFunctions },
      });
      gateways.push(gateway);
      return gateway;
    };
    before(() => inventoryTables(s.bed.db));
    after(() => Promise.all(gateways.map((gateway) => gateway.stop())));

    it('masks the value in the output of the instance that runs it', async () => {
      const planted = `${PLANTED}-moved`;
      const asking = await start();
      const ana = await loginToken(asking.base, 'ana', passwordOf('ana'));
      const asked = await toolkitClient(asking.base, ana).post('inv', 'deploy', { env: 'prod', host: 'web-1', token: planted });
      expect(asked.status, JSON.stringify(asked.body)).to.equal(202);
      const id = asked.body.data.run_id as string;
      await asking.stop();
      const running = await start();
      const vic = await loginToken(running.base, 'vic', passwordOf('vic'));
      expect((await call('POST', `${running.base}/runs/${id}/approve`, { token: vic, body: {} })).status).to.equal(200);
      await eventually('the run ended', async () => (await call('GET', `${running.base}/runs/${id}`, { token: vic })).body.data?.status === 'succeeded');
      expect(JSON.parse(readFileSync(path.join(seen, `${id}.json`), 'utf8')).payload.token).to.equal(planted);
      const output = await (await fetch(`${running.base}/runs/${id}/output`, { headers: { authorization: `Bearer ${vic}` } })).text();
      expect(output).to.include('"token":"***"');
      expect(output.includes(planted), 'the output holds the value').to.equal(false);
      expect(running.output().includes(planted), 'the log holds the value').to.equal(false);
    });
  });
}
