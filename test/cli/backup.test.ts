import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { authClient, loginToken } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`tkgate backup (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'bea' }]);

    if (dialect.name === 'sqlite') {
      it('copies the database while the gateway serves; a gateway on the copy knows its users; an existing file is never overwritten', async () => {
        // A session written before the backup: it is in the copy too.
        const token = await loginToken(s.gateway.base, 'bea', passwordOf('bea'));
        const copy = path.join(tempDir('tkgate-backup-'), 'copy.sqlite');
        const config = writeConfig({ db: s.bed.dbConfig });
        const made = await runCli(['backup', copy, '--config', config]);
        expect(made.code, made.stderr).to.equal(0);
        expect(made.stdout).to.equal(`backup written: ${copy}\n`);
        expect((await authClient(s.gateway.base).status(token)).status).to.equal(200);

        const again = await runCli(['backup', copy, '--config', config]);
        expect(again.code).to.equal(1);
        expect(again.stderr).to.include('exists: a backup never overwrites a file');

        const restored = await startGateway({ config: { db: { client: 'sqlite', filename: copy } } });
        try {
          expect((await authClient(restored.base).status(token)).status).to.equal(200);
          expect((await authClient(restored.base).login('bea', passwordOf('bea'))).status).to.equal(200);
        } finally {
          expect(await restored.stop()).to.equal(0);
        }
      });
    } else {
      const [server, tool] = dialect.name === 'postgres' ? ['PostgreSQL', 'pg_dump --format=custom'] : ['MySQL/MariaDB', 'mysqldump --single-transaction'];
      it(`points ${server} to ${tool.split(' ')[0]} in one line and writes nothing`, async () => {
        const dir = tempDir('tkgate-backup-');
        const copy = path.join(dir, 'copy.sqlite');
        const refused = await runCli(['backup', copy, '--config', writeConfig({ db: s.bed.dbConfig })]);
        expect(refused.code).to.equal(1);
        expect(refused.stderr).to.include(tool);
        expect(refused.stderr.trim().split('\n')).to.have.length(1);
        expect(existsSync(copy)).to.equal(false);
      });
    }
  });
}
