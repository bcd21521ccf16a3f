import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig } from '../support/gateway-process.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

const KEY_SHAPE = /^tkg_[A-Za-z0-9_-]{43}$/;
const notes = { name: 'notes', type: 'app', endpoints: [echoEndpoint()] };
const other = { name: 'other', type: 'app', endpoints: [echoEndpoint()] };

/** `tkgate apikey create|list|revoke` (docs/api-keys.md) against a running gateway on the same database. */
for (const dialect of dialects) {
  describe(`tkgate apikey (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(
      dialect,
      [
        { username: 'ann', power: 10 },
        { username: 'bob', power: 10 },
      ],
      { sessions: { cache_ttl: '1s' }, auth: { api_keys_per_user: 3 } },
      { toolkitsDir: toolkitDir({ 'notes.yaml': notes, 'other.yaml': other }) },
    );
    const cli = (...args: string[]) => runCli([...args, '--config', writeConfig({ db: s.bed.dbConfig, auth: { api_keys_per_user: 3 } })]);
    /** The key (alone on the first line of stdout) and its id (on the second). */
    const created = async (...args: string[]) => {
      const result = await cli('apikey', 'create', ...args);
      expect(result.code, result.stderr).to.equal(0);
      const lines = result.stdout.split('\n');
      expect(lines[0]).to.match(KEY_SHAPE);
      return { key: lines[0]!, id: /^api key ([0-9a-f]{16}) created for /.exec(lines[1]!)![1]!, result };
    };

    it('create prints the key once, alone on a line, and its id; the key calls the gateway with its scope and expiry', async () => {
      const { key, id, result } = await created('ann', '--name', 'nightly', '--toolkit', 'notes', '--toolkit', 'other', '--expires', '90d');
      expect(result.stdout.split('\n')[1]).to.match(/name nightly; scope notes, other; expires \d{4}-/);
      expect(result.stderr).to.include('shown only now');
      const status = await s.auth.status(key);
      expect(status.status).to.equal(200);
      expect(status.body.data).to.deep.include({ kind: 'api_key', key_id: id, name: 'nightly', scope: ['notes', 'other'] });
      expect(Date.parse(status.body.data.expires_at) - Date.parse(status.body.data.created_at)).to.equal(90 * 86_400_000);
      expect((await toolkitClient(s.gateway.base, key).get('notes', 'echo')).body.data.username).to.equal('ann');
    });

    it('list shows id, name, user, scope, created, expires, last used and revoked, never the key; revoke ends it on the gateway', async () => {
      const { key, id } = await created('bob');
      expect((await toolkitClient(s.gateway.base, key).get('other', 'echo')).status).to.equal(200);
      const row = async (...user: string[]) => {
        const listed = await cli('apikey', 'list', ...user);
        expect(listed.code, listed.stderr).to.equal(0);
        expect(listed.stdout).not.to.include(key.slice(4));
        const lines = listed.stdout.trimEnd().split('\n');
        expect(lines[0]).to.match(/^ID\s+NAME\s+USER\s+SCOPE\s+CREATED\s+EXPIRES\s+LAST USED\s+REVOKED$/);
        return { lines, mine: lines.find((line) => line.startsWith(id))?.split(/\s+/) };
      };
      const { mine } = await eventually('the first use is stored', async () => {
        const listed = await row('bob');
        return listed.mine?.[6] !== '-' ? listed : undefined;
      });
      expect(mine!.slice(0, 4)).to.deep.equal([id, 'unnamed', 'bob', '*']);
      expect(mine![4]).to.match(/^\d{4}-\d\d-\d\dT/);
      expect(mine![5]).to.equal('-');
      expect(mine![7]).to.equal('-');
      // Without USER: everyone's keys; with it, that user's only.
      const all = await row();
      expect(all.lines.some((line) => / ann /.test(line))).to.equal(true);
      expect((await row('bob')).lines.slice(1).every((line) => line.split(/\s+/)[2] === 'bob')).to.equal(true);

      const revoked = await cli('apikey', 'revoke', id);
      expect(revoked.code, revoked.stderr).to.equal(0);
      expect(revoked.stdout).to.match(new RegExp(`^api key ${id} revoked \\(\\d{4}-`));
      await eventually('the gateway refuses the revoked key', async () => (await s.auth.status(key)).status === 401);
      expect((await row('bob')).mine![7]).to.match(/^\d{4}-/);
    });

    it('fails with one line: unknown user or key, bad options (naming the option), too many keys', async function () {
      this.timeout(120_000); // ten CLI runs, each a Node start: a loaded machine needs more than the default 30 s
      const cases: Array<[string[], number, RegExp]> = [
        [['apikey', 'create', 'nobody'], 1, /^tkgate apikey create: no user named nobody\n$/],
        [['apikey', 'create', 'ann', '--expires', 'soon'], 2, /^tkgate apikey create: --expires: .*duration/],
        [['apikey', 'create', 'ann', '--expires', '0'], 2, /^tkgate apikey create: --expires: /],
        [['apikey', 'create', 'ann', '--toolkit', 'Not A Toolkit'], 2, /^tkgate apikey create: --toolkit: /],
        [['apikey', 'create', 'ann', '--name', 'x'.repeat(65)], 2, /^tkgate apikey create: --name: /],
        [['apikey', 'revoke', 'ffffffffffffffff'], 1, /^tkgate apikey revoke: no API key with id ffffffffffffffff\n$/],
        [['apikey', 'list', 'nobody'], 1, /^tkgate apikey list: no user named nobody\n$/],
      ];
      for (const [args, code, stderr] of cases) {
        const result = await cli(...args);
        expect(result.code, args.join(' ')).to.equal(code);
        expect(result.stderr, args.join(' ')).to.match(stderr);
        expect(result.stdout, args.join(' ')).to.equal('');
      }
      // ann has one live key (the first test's); auth.api_keys_per_user is 3.
      await created('ann');
      await created('ann');
      const tooMany = await cli('apikey', 'create', 'ann');
      expect(tooMany.code).to.equal(1);
      expect(tooMany.stderr).to.match(/^tkgate apikey create: the user has 3 live API keys already/);
      expect(tooMany.stdout).to.equal('');
    });

    it('api_keys can never be read through toolkit configuration (config check refuses it)', async () => {
      const peek = {
        name: 'peek',
        type: 'app',
        endpoints: [{ path: 'hashes', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'api_keys', columns: ['key_hash', 'user_id'] }] }],
      };
      const check = await cli('config', 'check', toolkitDir({ 'peek.yaml': peek }));
      expect(check.code).to.equal(1);
      expect(check.stdout + check.stderr).to.include('table api_keys can never be read through configuration');
    });

    it('help lists the apikey commands', async () => {
      const help = await runCli(['apikey', '--help']);
      expect(help.code).to.equal(0);
      expect(help.stdout).to.match(/tkgate apikey create USER \[--name N\] \[--toolkit T\]\.\.\. \[--expires 90d\]/);
      expect(help.stdout).to.include('tkgate apikey list [USER]').and.include('tkgate apikey revoke ID');
    });
  });
}
