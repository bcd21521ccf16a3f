import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { createTestbed, type Testbed } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';

for (const dialect of dialects) {
  describe(`tkgate audit and the CLI's changes [${dialect.name}]`, function () {
    this.timeout(120_000);
    let bed: Testbed;
    let config: string;
    const cli = async (args: string[], stdin?: string) => {
      const result = await runCli([...args, '--config', config], { stdin });
      return result;
    };
    const ok = async (args: string[], stdin?: string) => {
      const result = await cli(args, stdin);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).to.equal(0);
      return result;
    };
    const jsonLines = (stdout: string) =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, any>);

    before(async () => {
      bed = await createTestbed(dialect);
      config = writeConfig({ db: bed.dbConfig });
    });
    after(async () => {
      await bed?.close();
    });

    it('records every change of user, group and sessions commands, never a password', async () => {
      await ok(['user', 'add', 'carol', '--power', '20', '--group', 'staff', '--password-stdin'], 'first-secret-pw\n');
      await ok(['user', 'passwd', 'carol', '--password-stdin'], 'second-secret-pw\n');
      await ok(['user', 'set', 'carol', '--power', '30']);
      await ok(['user', 'disable', 'carol']);
      await ok(['user', 'enable', 'carol']);
      await ok(['group', 'add', 'ops']);
      await ok(['group', 'assoc', 'notes', 'ops', 'editor']);
      await ok(['group', 'override', 'notes', 'carol', 'admin']);
      await ok(['sessions', 'clear', 'carol']);
      // A refused change is not one: nothing is recorded for it.
      expect((await cli(['user', 'add', 'carol', '--password-stdin'], 'x-pw\n')).code).to.not.equal(0);

      const events = jsonLines((await ok(['audit', '--json'])).stdout);
      expect(events.map((event) => event.action)).to.deep.equal([
        'sessions_clear',
        'group_override',
        'group_assoc',
        'group_add',
        'user_enable',
        'user_disable',
        'user_set',
        'user_passwd',
        'user_add',
      ]);
      for (const event of events) expect(event).to.include({ actor: 'cli', code: 'ok', actor_user_id: null });
      const byAction = Object.fromEntries(events.map((event) => [event.action, event.details]));
      expect(byAction.user_add).to.include({ username: 'carol', power: 20, group: 'staff' });
      expect(byAction.group_assoc).to.include({ toolkit: 'notes', core_group: 'ops', toolkit_group: 'editor' });
      expect(byAction.sessions_clear).to.include({ username: 'carol', cleared: 0 });
      const table = JSON.stringify(await bed.db('audit_events').select());
      expect(table).not.to.include('secret-pw');
    });

    it('filters by action, user, toolkit, time and count, newest first; the table form has one line per event', async () => {
      const carol = Number((await bed.db('users').where({ username: 'carol' }).first('id')).id);
      await bed.db('audit_events').insert([
        {
          at: Date.now() - 3 * 3_600_000,
          actor: 'session',
          actor_user_id: carol,
          action: 'call',
          toolkit: 'notes',
          endpoint: 'list',
          method: 'GET',
          status: 200,
          code: 'ok',
        },
        {
          at: Date.now() - 60_000,
          actor: 'session',
          actor_user_id: carol,
          action: 'call',
          toolkit: 'reports',
          endpoint: 'run',
          method: 'POST',
          status: 500,
          code: 'exec_failed',
        },
      ]);
      const calls = jsonLines((await ok(['audit', '--action', 'call', '--json'])).stdout);
      expect(calls.map((event) => event.toolkit)).to.deep.equal(['reports', 'notes']);
      expect(calls[0]).to.include({ username: 'carol', endpoint: 'run', status: 500, code: 'exec_failed' });
      expect(jsonLines((await ok(['audit', '--user', 'carol', '--json'])).stdout)).to.have.length(2);
      expect(jsonLines((await ok(['audit', '--user', 'nobody', '--json'])).stdout)).to.have.length(0);
      expect(jsonLines((await ok(['audit', '--toolkit', 'notes', '--json'])).stdout).map((event) => event.endpoint)).to.deep.equal(['list']);
      expect(jsonLines((await ok(['audit', '--action', 'call', '--since', '1h', '--json'])).stdout).map((event) => event.toolkit)).to.deep.equal(['reports']);
      expect(jsonLines((await ok(['audit', '--action', 'call', '--until', '2h', '--json'])).stdout).map((event) => event.toolkit)).to.deep.equal(['notes']);
      expect(jsonLines((await ok(['audit', '--limit', '3', '--json'])).stdout)).to.have.length(3);

      const table = (await ok(['audit', '--action', 'call'])).stdout.trim().split('\n');
      expect(table).to.have.length(2);
      expect(table[0]).to.match(/^\d{4}-\d\d-\d\dT\S+Z {2}call {2}session:carol {2}.*reports\/run POST {2}500 exec_failed/);
    });

    it('refuses a bad filter with one line naming the option', async () => {
      for (const [option, value] of [
        ['--since', 'last tuesday'],
        ['--limit', 'many'],
      ] as const) {
        const result = await cli(['audit', option, value]);
        expect(result.code, option).to.equal(2);
        expect(result.stderr.trim().split('\n')).to.have.length(1);
        expect(result.stderr).to.include(option);
      }
    });

    it("records apikey create and revoke with the key's id, never the key", async () => {
      const created = await ok(['apikey', 'create', 'carol', '--name', 'cron']);
      const key = created.stdout.split('\n')[0]!;
      expect(key).to.match(/^tkg_/);
      const id = /api key ([0-9a-f]+) created/.exec(created.stdout)![1]!;
      await ok(['apikey', 'revoke', id]);
      const [revoke, create] = jsonLines((await ok(['audit', '--json', '--limit', '2'])).stdout);
      expect(create).to.include({ action: 'apikey_create', actor: 'cli', code: 'ok' });
      expect(create!.details).to.include({ username: 'carol', key_id: id, name: 'cron' });
      expect(revoke).to.include({ action: 'apikey_revoke', actor: 'cli', code: 'ok' });
      expect(revoke!.details).to.include({ key_id: id });
      expect(JSON.stringify(await bed.db('audit_events').select())).not.to.include(key);
    });
  });
}
