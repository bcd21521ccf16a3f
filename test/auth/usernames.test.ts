import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';
import { withGateway } from '../support/suite.js';

/** docs/scaling.md, "Guarantees and how they hold": usernames compare byte for byte on every database (MariaDB's PAD SPACE collations did not). */
for (const dialect of dialects) {
  describe(`usernames byte for byte (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'alice' }, { username: 'root', power: 100 }], { auth: { login_max_failures: 3 } }, { process: true }); // stdout is scanned;

    it('"alice   " and "ALICE" are not alice, even with her password, and get no guesses of hers', async () => {
      for (const variant of ['alice   ', 'alice ', 'ALICE', 'alice\t']) {
        const reply = await s.auth.login(variant, passwordOf('alice'));
        expect(reply.status, JSON.stringify(variant)).to.equal(401);
        expect(reply.body.error.code).to.equal('invalid_credentials');
      }
      expect((await s.auth.login('alice', passwordOf('alice'))).status).to.equal(200);
    });

    it('clear-sessions and the CLI find no user for a padded name', async () => {
      const admin = await s.login('root');
      expect((await s.auth.clearSessions(admin, { username: 'alice  ' })).status).to.equal(404);
      const cli = await runCli(['sessions', 'clear', 'alice  ', '--config', writeConfig({ db: s.bed.dbConfig })]);
      expect(cli.code).to.equal(1);
      expect(cli.stderr).to.match(/no user named/);
    });

    it('logs a refused login by username only when that user exists, else by a hash prefix', async () => {
      await s.auth.login('alice', 'wrong-password');
      await s.auth.login('correct-horse-battery', 'x');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const refused = s.gateway.logs.filter((record) => record.msg === 'login refused');
      expect(refused.some((record) => record.username === 'alice')).to.equal(true);
      const unknown = refused.find((record) => record.username_hash);
      expect(unknown?.username).to.equal(undefined);
      expect(String(unknown?.username_hash)).to.match(/^[0-9a-f]{8}$/);
      expect(s.gateway.output()).not.to.include('correct-horse-battery');
    });
  });
}
