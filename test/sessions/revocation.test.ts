import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { runCli } from '../support/cli.js';
import { passwordOf } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`changes made by the CLI reach a running gateway (${dialect.name})`, () => {
    // cache_ttl 0: every request reads the database, so "the next request" holds exactly (with the default
    // 1 s cache, within that second: test/scale/multi-instance.test.ts).
    const s = withGateway(dialect, [{ username: 'ivan' }, { username: 'jane' }, { username: 'kim' }, { username: 'leo', power: 1 }], {
      sessions: { cache_ttl: 0 },
    });
    const cli = (...args: string[]) => runCli([...args, '--config', writeConfig({ db: s.bed.dbConfig })], { stdin: 'new-password-1\n' });

    it('a password change ends every session of that user', async () => {
      const token = await s.login('ivan');
      const other = await s.login('jane');
      const result = await cli('user', 'passwd', 'ivan', '--password-stdin');
      expect(result.code, result.stderr).to.equal(0);
      expect((await s.auth.status(token)).status).to.equal(401);
      expect((await s.auth.status(other)).status).to.equal(200);
      expect((await s.auth.login('ivan', passwordOf('ivan'))).status).to.equal(401);
      expect((await s.auth.login('ivan', 'new-password-1')).status).to.equal(200);
    });

    it('disabling a user ends their sessions and refuses their logins', async () => {
      const token = await s.login('kim');
      expect((await cli('user', 'disable', 'kim')).code).to.equal(0);
      expect((await s.auth.status(token)).status).to.equal(401);
      const refused = await s.auth.login('kim', passwordOf('kim'));
      expect(refused.status).to.equal(401);
      expect(refused.body.error.code).to.equal('invalid_credentials');
      expect((await cli('user', 'enable', 'kim')).code).to.equal(0);
      expect((await s.auth.login('kim', passwordOf('kim'))).status).to.equal(200);
    });

    it('`tkgate sessions clear` ends the sessions a running gateway holds', async () => {
      const token = await s.login('jane');
      const result = await cli('sessions', 'clear', 'jane');
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.match(/sessions of jane ended/);
      expect((await s.auth.status(token)).status).to.equal(401);
      expect(await s.bed.db('sessions').where({ user_id: (await s.bed.db('users').where({ username: 'jane' }).first()).id })).to.have.length(0);
    });

    it('a changed power is seen on the next request, not at the next login', async () => {
      const token = await s.login('leo');
      expect((await s.auth.status(token)).body.data.user.power).to.equal(1);
      expect((await s.auth.clearSessions(token, { username: 'ivan' })).status).to.equal(403);
      expect((await cli('user', 'set', 'leo', '--power', '150')).code).to.equal(0);
      expect((await s.auth.status(token)).body.data.user.power).to.equal(150);
      expect((await s.auth.clearSessions(token, { username: 'ivan' })).status).to.equal(200);
    });
  });
}
