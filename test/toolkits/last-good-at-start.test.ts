import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { call, loginToken, toolkitClient } from '../support/http.js';
import { withDatabase } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';

/** A file of toolkit `notes` that the gateway refuses (an endpoint type no plugin registers). */
const BROKEN_NOTES = 'name: notes\ntype: app\nendpoints:\n  - { path: echo, method: GET, type: nope }\n';
const root = (gateway: GatewayProcess) => new URL(gateway.base).origin;

for (const dialect of dialects) {
  describe(`toolkits.on_invalid_at_start: one team's broken file never stops the gateway (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withDatabase(dialect, [{ username: 'alice' }]);
    let dir: string;

    const start = (onInvalid?: string) =>
      startGateway({
        config: {
          db: s.bed.dbConfig,
          plugins: pluginsWithTestFunctions,
          toolkits: { dir, watch: false, ...(onInvalid && { on_invalid_at_start: onInvalid }) },
        },
      });
    const echo = async (gateway: GatewayProcess, toolkit: string) =>
      toolkitClient(gateway.base, await loginToken(gateway.base, 'alice', passwordOf('alice'))).get(toolkit, 'echo');

    before(async () => {
      dir = toolkitDir({
        'notes.yaml': { name: 'notes', type: 'app', endpoints: [echoEndpoint()] },
        'other.yaml': { name: 'other', type: 'app', endpoints: [echoEndpoint()] },
      });
      // The first start serves both from their files and records their versions.
      const first = await start();
      expect((await echo(first, 'notes')).status).to.equal(200);
      expect(await first.stop()).to.equal(0);
      writeToolkit(dir, 'notes.yaml', BROKEN_NOTES);
    });

    it('last_good (the default): the broken toolkit serves its last good version from the database, logged as an error; /readyz reports it and stays 200', async () => {
      const gateway = await start();
      try {
        const notes = await echo(gateway, 'notes');
        expect(notes.status).to.equal(200);
        expect(notes.body.data.username).to.equal('alice');
        expect((await echo(gateway, 'other')).status).to.equal(200);
        const refusal = gateway.logs.find((line) => line.msg === 'toolkit file refused');
        expect(refusal).to.include({ level: 'error', file: 'notes.yaml' });
        expect(gateway.logs.find((line) => line.msg === 'toolkit served at its last good version from the database')).to.include({
          level: 'error',
          toolkit: 'notes',
        });
        const ready = await call('GET', `${root(gateway)}/readyz`);
        expect(ready.status).to.equal(200);
        expect(ready.body.checks.toolkits).to.equal('1 refused');
      } finally {
        expect(await gateway.stop()).to.equal(0);
      }
    });

    it('records one row per toolkit and version, however often it starts', async () => {
      const db = s.bed.db;
      const rows = (await db('toolkit_versions').select('name', 'instance').orderBy('name')) as Array<{ name: string; instance: string }>;
      expect(rows.map((row) => row.name)).to.deep.equal(['notes', 'other']);
      expect(rows[0]!.instance).to.match(/:\d+$/);
    });

    it('toolkit_versions can never be read through configuration', async () => {
      const probe = toolkitDir({
        'peek.yaml': {
          name: 'peek',
          type: 'app',
          endpoints: [{ path: 'x', method: 'GET', type: 'internal', pseudo_querys: [{ name: 'v', select: 'toolkit_versions', columns: ['content'] }] }],
        },
      });
      const result = await runCli(['config', 'check', probe, '--config', writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions })]);
      expect(result.code).to.equal(1);
      expect(result.stdout).to.match(/table toolkit_versions can never be read through configuration/);
    });

    it('skip: starts without the broken toolkit, the others serve', async () => {
      const gateway = await start('skip');
      try {
        const notes = await echo(gateway, 'notes');
        expect([notes.status, notes.body.error?.code]).to.deep.equal([404, 'toolkit_not_found']);
        expect((await echo(gateway, 'other')).status).to.equal(200);
        const ready = await call('GET', `${root(gateway)}/readyz`);
        expect([ready.status, ready.body.checks.toolkits]).to.deep.equal([200, '1 refused']);
      } finally {
        expect(await gateway.stop()).to.equal(0);
      }
    });

    it('refuse: refuses to start, in one line naming the problem', async () => {
      const config = writeConfig({
        db: s.bed.dbConfig,
        plugins: pluginsWithTestFunctions,
        toolkits: { dir, watch: false, on_invalid_at_start: 'refuse' },
        server: { port: 0 },
        metrics: { port: 0 },
      });
      const result = await runCli(['start', '--config', config]);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/^tkgate start: 1 problem\(s\) in toolkit files: notes\.yaml:4:\d+: endpoints\.0\.type/);
    });

    it('keeps a few versions per toolkit: each hot reload records the new one, the oldest are pruned', async () => {
      const own = toolkitDir({ 'kept.yaml': { name: 'kept', type: 'app', endpoints: [echoEndpoint()] } });
      const gateway = await startGateway({ config: { db: s.bed.dbConfig, plugins: pluginsWithTestFunctions, toolkits: { dir: own, watch: true } } });
      const hashes = async () =>
        ((await s.bed.db('toolkit_versions').where({ name: 'kept' }).select('content_hash')) as Array<{ content_hash: string }>).map((row) => row.content_hash);
      try {
        await eventually('the first version recorded', async () => ((await hashes()).length === 1 ? true : undefined));
        for (let version = 1; version <= 4; version++) {
          writeToolkit(own, 'kept.yaml', { name: 'kept', type: 'app', description: `version ${version}`, endpoints: [echoEndpoint()] });
          const hash = createHash('sha256')
            .update(readFileSync(path.join(own, 'kept.yaml')))
            .digest('hex');
          await eventually(`version ${version} recorded`, async () => ((await hashes()).includes(hash) ? true : undefined));
        }
        // The newest is written before the oldest go: wait for the prune that follows it.
        await eventually('the oldest versions pruned', async () => ((await hashes()).length === 3 ? true : undefined));
      } finally {
        expect(await gateway.stop()).to.equal(0);
      }
    });

    it('the environment sets it too (TKGATE_TOOLKITS_ON_INVALID_AT_START)', async () => {
      const config = writeConfig({
        db: s.bed.dbConfig,
        plugins: pluginsWithTestFunctions,
        toolkits: { dir, watch: false },
        server: { port: 0 },
        metrics: { port: 0 },
      });
      const result = await runCli(['start', '--config', config], { env: { TKGATE_TOOLKITS_ON_INVALID_AT_START: 'refuse' } });
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/problem\(s\) in toolkit files/);
    });
  });
}
