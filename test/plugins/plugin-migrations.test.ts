import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects, tableNames } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';

function pluginFile(name: string, source: string): string {
  const file = path.join(tempDir('tkgate-plugin-'), `${name}.mjs`);
  writeFileSync(file, source);
  return file;
}

/** A plugin that ships two migrations of its own table (no import of core needed: knex comes as an argument). */
const counterPlugin = () =>
  pluginFile(
    'counters',
    `export default {
  name: 'tkgate-plugin-counters',
  apiVersion: '^1.1',
  register() {},
  migrations: {
    '001_counters': {
      up: (db) => db.schema.createTable('plugin_counters', (t) => { t.increments('id'); t.string('name', 64).notNullable().unique(); }),
      down: (db) => db.schema.dropTable('plugin_counters'),
    },
    '002_hits': {
      up: (db) => db.schema.alterTable('plugin_counters', (t) => { t.integer('hits').notNullable().defaultTo(0); }),
    },
  },
};`,
  );

const counters: ToolkitDoc = {
  name: 'counters',
  type: 'app',
  endpoints: [
    { path: 'all', method: 'GET', type: 'internal', pseudo_querys: [{ name: 'rows', select: 'plugin_counters', columns: ['name', 'hits'], order_by: 'name' }] },
  ],
};

for (const dialect of dialects) {
  describe(`plugin migrations (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'cy' }]);

    it("runs a plugin's migrations with tkgate migrate, once, recorded under the plugin, and check() sees its tables", async () => {
      const plugins = ['@tkgate/plugin-internal', counterPlugin()];
      const config = writeConfig({ db: s.bed.dbConfig, plugins });
      const first = await runCli(['migrate', '--config', config]);
      expect(first.code, first.stderr).to.equal(0);
      expect(first.stdout.trim()).to.equal('applied: tkgate-plugin-counters/001_counters, tkgate-plugin-counters/002_hits');
      const again = await runCli(['migrate', '--config', config]);
      expect(again.stdout.trim()).to.equal('already up to date');

      const tables = JSON.stringify(await tableNames(s.bed.db, dialect.name));
      expect(tables).to.match(/tkgate_plugin_tkgate_plugin_counters_[0-9a-f]{8}"/);
      // core's own table holds core's migrations only (001_initial … 017_run_output_bytes)
      expect(await s.bed.db('tkgate_migrations').count({ n: '*' }).first()).to.deep.include({ n: 16 });

      await s.bed.db('plugin_counters').insert({ name: 'visits', hits: 3 });
      const dir = toolkitDir({ 'counters.yaml': counters });
      const check = await runCli(['config', 'check', dir, '--config', config]);
      expect(check.code, check.stdout + check.stderr).to.equal(0);
      const gateway = await startGateway({ config: { db: s.bed.dbConfig, plugins, toolkits: { dir, watch: false } } });
      try {
        const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'cy', passwordOf('cy')));
        expect((await client.get('counters', 'all')).body.data).to.deep.equal([{ name: 'visits', hits: 3 }]);
      } finally {
        await gateway.stop();
      }
    });

    it("refuses a plugin migration that changes tkgate's own tables", async () => {
      const meddler = pluginFile(
        'meddler',
        `export default {
  name: 'meddler',
  apiVersion: '^1.1',
  register() {},
  migrations: { '001_nick': { up: (db) => db.schema.alterTable('users', (t) => { t.string('nick', 20); }) } },
};`,
      );
      const result = await runCli(['migrate', '--config', writeConfig({ db: s.bed.dbConfig, plugins: [meddler] })]);
      expect(result.code).to.equal(1);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.match(/plugin meddler: its migrations changed tkgate's own tables \(001_nick\)/);
    });
  });
}
