import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { createTestbed, type Testbed } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';

describe('tkgate CLI without a database', () => {
  it('prints usage for --help and exits 0', async () => {
    const result = await runCli(['--help']);
    expect(result.code).to.equal(0);
    for (const command of ['start', 'migrate', 'user add', 'user passwd', 'user list', 'group add', 'group assoc', 'group override', 'sessions clear']) {
      expect(result.stdout).to.include(`tkgate ${command}`);
    }
  });

  it('answers an unknown command, a missing operand and an unknown option with one line and exit 2', async () => {
    for (const args of [['frobnicate'], ['user', 'add'], ['user', 'add', 'x', '--bogus'], ['group', 'assoc', 'a', 'b'], ['start', '--port', 'eighty']]) {
      const result = await runCli(args, { cwd: tempDir() });
      expect(result.code, args.join(' ')).to.equal(2);
      expect(result.stderr.trim().split('\n'), args.join(' ')).to.have.length(1);
    }
  });
});

for (const dialect of dialects) {
  describe(`tkgate CLI (${dialect.name})`, () => {
    let bed: Testbed;
    let config: string;
    const cli = (args: string[], stdin?: string) => runCli([...args, '--config', config], { stdin });

    before(async () => {
      bed = await createTestbed(dialect);
      config = writeConfig({ db: bed.dbConfig });
    });
    after(async () => {
      await bed?.close();
    });

    it('migrate is idempotent', async () => {
      const result = await cli(['migrate']);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.equal('already up to date\n');
    });

    it('user add stores an argon2id hash, creates a missing core group and refuses duplicates', async () => {
      const added = await cli(['user', 'add', 'uma', '--power', '42', '--group', 'ops', '--password-stdin'], 'uma-password\nignored second line\n');
      expect(added.code, added.stderr).to.equal(0);
      expect(added.stdout).to.match(/^user uma added \(id \d+\)\n$/);
      const row = await bed
        .db('users')
        .leftJoin('core_groups', 'core_groups.id', 'users.core_group_id')
        .where({ username: 'uma' })
        .first('power', 'password_hash', 'name', 'disabled');
      expect(row.power).to.equal(42);
      expect(row.name).to.equal('ops');
      expect(Boolean(row.disabled)).to.equal(false);
      expect(row.password_hash).to.match(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect(row.password_hash).not.to.include('uma-password');

      const again = await cli(['user', 'add', 'uma', '--password-stdin'], 'x\n');
      expect(again.code).to.equal(1);
      expect(again.stderr).to.equal('tkgate user add: user uma already exists\n');
    });

    it('user add refuses a bad name, an empty password and a bad power', async () => {
      const badName = await cli(['user', 'add', 'no spaces', '--password-stdin'], 'pw\n');
      expect(badName.code).to.equal(1);
      expect(badName.stderr).to.match(/invalid username "no spaces"/);
      const emptyPassword = await cli(['user', 'add', 'vera', '--password-stdin'], '\n');
      expect(emptyPassword.code).to.equal(1);
      expect(emptyPassword.stderr).to.match(/password must be 1-1024 characters/);
      const badPower = await cli(['user', 'add', 'vera', '--power', 'high', '--password-stdin'], 'pw\n');
      expect(badPower.code).to.equal(2);
      expect(await bed.db('users').where({ username: 'vera' })).to.have.length(0);
    });

    it('user add without --password-stdin and without a terminal says how to give one', async () => {
      const result = await cli(['user', 'add', 'walt']);
      expect(result.code).to.equal(2);
      expect(result.stderr).to.match(/--password-stdin/);
    });

    it('user list shows every user', async () => {
      await cli(['user', 'add', 'xena', '--password-stdin'], 'pw-x\n');
      const result = await cli(['user', 'list']);
      expect(result.code).to.equal(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines[0]).to.match(/^ID\s+USERNAME\s+POWER\s+GROUP\s+DISABLED\s+CREATED\s+PROVIDER$/);
      expect(lines.some((line) => /^\d+\s+uma\s+42\s+ops\s+no\s+\d{4}-\d\d-\d\dT/.test(line))).to.equal(true);
      expect(lines.some((line) => /^\d+\s+xena\s+0\s+-\s+no\s+/.test(line))).to.equal(true);
    });

    it('user passwd replaces the hash; unknown users are one clear line', async () => {
      const before = (await bed.db('users').where({ username: 'xena' }).first('password_hash')).password_hash;
      const changed = await cli(['user', 'passwd', 'xena', '--password-stdin'], 'new-x\n');
      expect(changed.code, changed.stderr).to.equal(0);
      const after = (await bed.db('users').where({ username: 'xena' }).first('password_hash')).password_hash;
      expect(after).not.to.equal(before);
      const unknown = await cli(['user', 'passwd', 'nobody', '--password-stdin'], 'pw\n');
      expect(unknown.code).to.equal(1);
      expect(unknown.stderr).to.equal('tkgate user passwd: no user named nobody\n');
    });

    it('group add, assoc and override write the mapping tables, replacing earlier rows', async function () {
      this.timeout(120_000); // eleven CLI runs in turn
      expect((await cli(['group', 'add', 'devs'])).code).to.equal(0);
      const duplicate = await cli(['group', 'add', 'devs']);
      expect(duplicate.code).to.equal(1);
      expect(duplicate.stderr).to.match(/core group devs already exists/);

      expect((await cli(['group', 'assoc', 'notes', 'devs', 'editor'])).code).to.equal(0);
      expect((await cli(['group', 'assoc', 'notes', 'devs', 'viewer'])).code).to.equal(0);
      const assoc = await bed
        .db('jde_associations')
        .join('core_groups', 'core_groups.id', 'jde_associations.core_group_id')
        .select('toolkit', 'name', 'toolkit_group');
      expect(assoc).to.deep.equal([{ toolkit: 'notes', name: 'devs', toolkit_group: 'viewer' }]);

      expect((await cli(['group', 'override', 'notes', 'uma', 'admin'])).code).to.equal(0);
      expect((await cli(['group', 'override', 'notes', 'uma', 'owner'])).code).to.equal(0);
      const overrides = await bed.db('toolkit_overrides').join('users', 'users.id', 'toolkit_overrides.user_id').select('toolkit', 'username', 'toolkit_group');
      expect(overrides).to.deep.equal([{ toolkit: 'notes', username: 'uma', toolkit_group: 'owner' }]);

      const missingGroup = await cli(['group', 'assoc', 'notes', 'ghosts', 'editor']);
      expect(missingGroup.code).to.equal(1);
      expect(missingGroup.stderr).to.equal('tkgate group assoc: no core group named ghosts (create it with: tkgate group add ghosts)\n');
      const badToolkit = await cli(['group', 'assoc', 'Notes!', 'devs', 'editor']);
      expect(badToolkit.code).to.equal(1);
      expect(badToolkit.stderr).to.match(/invalid toolkit "Notes!"/);
      const missingUser = await cli(['group', 'override', 'notes', 'nobody', 'owner']);
      expect(missingUser.code).to.equal(1);
      expect(missingUser.stderr).to.match(/no user named nobody/);
    });

    it('user set changes power and group; sessions clear reports what it removed', async () => {
      expect((await cli(['user', 'set', 'xena', '--power', '7', '--group', 'devs'])).code).to.equal(0);
      const row = await bed.db('users').leftJoin('core_groups', 'core_groups.id', 'users.core_group_id').where({ username: 'xena' }).first('power', 'name');
      expect(row).to.deep.equal({ power: 7, name: 'devs' });
      const cleared = await cli(['sessions', 'clear', 'xena']);
      expect(cleared.code).to.equal(0);
      expect(cleared.stdout).to.equal('sessions of xena ended (0 stored)\n');
    });
  });
}
