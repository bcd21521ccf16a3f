import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects, tableNames, type DialectTarget, type TestDatabase } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';

/** A plugin with two migrations, the second changing the first's table: a dry run must see that table. */
function notesPlugin(): string {
  const file = path.join(tempDir('tkgate-plugin-'), 'notes.mjs');
  writeFileSync(
    file,
    `export default {
  name: 'tkgate-plugin-notes',
  apiVersion: '^1.1',
  register() {},
  migrations: {
    '001_notes': { up: (db) => db.schema.createTable('plugin_notes', (t) => { t.increments('id'); t.string('body', 200); }) },
    '002_pinned': { up: (db) => db.schema.alterTable('plugin_notes', (t) => { t.boolean('pinned').notNullable().defaultTo(false); }) },
  },
};`,
  );
  return file;
}

/** The statements a real `tkgate migrate` ran that change the schema (knex's DEBUG=knex:query lines), not knex's own bookkeeping. */
function schemaChanges(debugOutput: string): string[] {
  return debugOutput
    .split('\n')
    .map((line) => /knex:query (.*) (?:trx\d+|undefined)$/.exec(line)?.[1])
    .filter((sql): sql is string => sql !== undefined)
    .filter((sql) => !/^(select|show|pragma|begin|commit|rollback|savepoint|release)\b/i.test(sql) && !/tkgate_migrations|tkgate_plugin_/.test(sql));
}

async function tablesOf(database: TestDatabase, dialect: DialectTarget['name']): Promise<string[]> {
  const db = database.open();
  try {
    return await tableNames(db, dialect);
  } finally {
    await db.destroy();
  }
}

for (const dialect of dialects) {
  describe(`tkgate migrate --status and --dry-run (${dialect.name})`, function () {
    this.timeout(120_000);
    let database: TestDatabase;
    let config: string;
    const cli = (...args: string[]) => runCli(['migrate', ...args, '--config', config]);

    before(async () => {
      database = await dialect.create();
      config = writeConfig({ db: database.dbConfig, plugins: ['@tkgate/plugin-internal', notesPlugin()] });
    });
    after(async () => {
      await database?.drop();
    });

    it('on an empty database: lists every migration as pending, prints the SQL of each, and creates no table', async () => {
      const status = await cli('--status');
      expect(status.code, status.stderr).to.equal(0);
      expect(status.stdout).to.equal(
        [
          'pending       001_initial',
          'pending       002_shared_authority',
          'pending       003_readiness',
          'pending       004_oidc',
          'pending       005_api_keys',
          'pending       006_audit_events',
          'pending       007_rate_limits',
          'pending       008_toolkit_versions',
          'pending       009_runs',
          'pending       010_run_approvals',
          'pending       012_run_nodes',
          'pending       013_run_claims',
          'pending       014_schedules',
          'pending       015_notifications',
          'pending       016_trigger_deliveries',
          'pending       017_run_output_bytes',
          'pending       tkgate-plugin-notes/001_notes',
          'pending       tkgate-plugin-notes/002_pinned',
          '18 pending: `tkgate migrate` (or the next start) applies them',
          '',
        ].join('\n'),
      );
      const dryRun = await cli('--dry-run');
      expect(dryRun.code, dryRun.stderr).to.equal(0);
      const headings = dryRun.stdout.split('\n').filter((line) => line.startsWith('-- '));
      expect(headings).to.deep.equal([
        '-- 001_initial',
        '-- 002_shared_authority',
        '-- 003_readiness',
        '-- 004_oidc',
        '-- 005_api_keys',
        '-- 006_audit_events',
        '-- 007_rate_limits',
        '-- 008_toolkit_versions',
        '-- 009_runs',
        '-- 010_run_approvals',
        '-- 012_run_nodes',
        '-- 013_run_claims',
        '-- 014_schedules',
        '-- 015_notifications',
        '-- 016_trigger_deliveries',
        '-- 017_run_output_bytes',
        '-- tkgate-plugin-notes/001_notes',
        '-- tkgate-plugin-notes/002_pinned',
      ]);
      // knex quotes names as each dialect does: PostgreSQL "users", the others `users`.
      const q = dialect.name === 'postgres' ? '"' : '`';
      expect(dryRun.stdout)
        .to.match(new RegExp(`^create table ${q}users${q} \\(`, 'm'))
        .and.match(new RegExp(`^alter table ${q}plugin_notes${q} add (column )?${q}pinned${q}`, 'm'));
      // MariaDB: 002 asks the server for its collations (a read that runs) and plans the ALTERs by the answer.
      if (dialect.name === 'mysql')
        expect(dryRun.stdout).to.match(/^ALTER TABLE `users` MODIFY `username` VARCHAR\(64\) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;$/m);
      expect(await tablesOf(database, dialect.name)).to.deep.equal([]);
    });

    it('prints exactly the statements the real migration then runs, after which status is up to date', async () => {
      const planned = (await cli('--dry-run')).stdout
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('-- '))
        .map((line) => line.replace(/;$/, ''));
      const applied = await runCli(['migrate', '--config', config], { env: { DEBUG: 'knex:query', DEBUG_COLORS: 'false' } });
      expect(applied.code, applied.stderr).to.equal(0);
      expect(planned).to.deep.equal(schemaChanges(applied.stderr));
      expect(planned.length).to.be.greaterThan(10);

      const status = await cli('--status');
      expect(status.stdout.split('\n').filter((line) => line.startsWith('applied '))).to.have.length(18);
      expect(status.stdout).to.match(/\nup to date\n$/);
      expect((await cli('--dry-run')).stdout).to.equal('-- already up to date: nothing would run\n');
    });

    it('names migrations the database records but this version does not have (a newer tkgate ran them), and migrate leaves them be', async () => {
      const db = database.open();
      try {
        await db('tkgate_migrations').insert({ name: '999_from_the_future', batch: 9, migration_time: new Date() });
      } finally {
        await db.destroy();
      }
      const status = await cli('--status');
      expect(status.stdout).to.include('recorded-only 999_from_the_future\n');
      // What a downgrade meets: this version has nothing pending and runs on the newer record.
      const migrated = await runCli(['migrate', '--config', config]);
      expect(migrated.code, migrated.stderr).to.equal(0);
      expect(migrated.stdout).to.equal('already up to date\n');
    });

    it('refuses --status with --dry-run as a usage error', async () => {
      const both = await cli('--status', '--dry-run');
      expect(both.code).to.equal(2);
      expect(both.stderr).to.include('--status and --dry-run exclude each other');
    });
  });
}
