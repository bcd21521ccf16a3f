import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';

/** A time as every CLI table and line writes it: ISO-8601 in UTC, to the millisecond. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Anything that looks like a date or a time of day, whatever its format. */
const TIME_LIKE = /\d{4}-\d{2}-\d{2}[ T]?[\d:.]*Z?|\b\d{1,2}:\d{2}(:\d{2})?\b|\b1\d{12}\b/g;

for (const dialect of dialects) {
  describe(`the CLI writes every time as ISO-8601 UTC (${dialect.name})`, function () {
    this.timeout(120_000);
    let config: string;
    let drop: () => Promise<void>;
    before(async () => {
      const database = await dialect.create();
      drop = () => database.drop();
      config = writeConfig({ db: database.dbConfig, toolkits: { dir: tempDir('tkgate-toolkits-') } });
    });
    after(() => drop?.());

    it('user list, apikey create / list / revoke and audit: one format, no local time, no epoch number', async () => {
      const cli = async (...args: string[]) => {
        const result = await runCli([...args, '--config', config], { stdin: 'a-long-password\n' });
        expect(result.code, result.stderr).to.equal(0);
        return result.stdout;
      };
      await cli('user', 'add', 'tess', '--password-stdin');
      const created = await cli('apikey', 'create', 'tess', '--expires', '30d');
      const id = /api key ([0-9a-f]+) created/.exec(created)![1]!;
      const outputs = [created, await cli('apikey', 'revoke', id), await cli('user', 'list'), await cli('apikey', 'list'), await cli('audit')];
      const times = outputs.flatMap((output) => output.match(TIME_LIKE) ?? []);
      expect(times.length).to.be.at.least(8);
      for (const time of times) expect(time).to.match(ISO_UTC);
    });
  });
}
