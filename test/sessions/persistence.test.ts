import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { withDatabase } from '../support/suite.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, loginToken } from '../support/http.js';

for (const dialect of dialects) {
  describe(`session persistence (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'hana' }]);
    let gateway: GatewayProcess | undefined;
    const start = async (sessions: Record<string, unknown> = {}) => {
      gateway = await startGateway({ config: { db: s.bed.dbConfig, sessions } });
      return authClient(gateway.base);
    };
    const login = () => loginToken(gateway!.base, 'hana', passwordOf('hana'));

    afterEach(async () => {
      await gateway?.stop('SIGKILL');
      gateway = undefined;
    });

    it('keeps sessions across a SIGTERM restart, and exits 0', async () => {
      let auth = await start();
      const token = await login();
      const created = (await auth.status(token)).body.data.created_at;
      expect(await gateway!.stop('SIGTERM')).to.equal(0);
      auth = await start();
      const reply = await auth.status(token);
      expect(reply.status).to.equal(200);
      expect(reply.body.data.created_at).to.equal(created);
    });

    it('keeps sessions across kill -9 right after login', async () => {
      let auth = await start();
      const token = await login();
      expect(await gateway!.stop('SIGKILL')).to.equal('SIGKILL');
      auth = await start();
      expect((await auth.status(token)).status).to.equal(200);
    });

    it('stores only SHA-256 hashes: the raw token is nowhere in the database', async () => {
      await start();
      const tokens = [await login(), await login()];
      const rows = await s.bed.db('sessions').select('*');
      const stored = JSON.stringify(rows);
      for (const token of tokens) expect(stored).not.to.include(token);
      for (const row of rows) expect(row.token_hash).to.match(/^[0-9a-f]{64}$/);
      if (dialect.name === 'sqlite') {
        const filename = String(s.bed.dbConfig.filename);
        const files = readdirSync(path.dirname(filename)).map((name) => path.join(path.dirname(filename), name));
        expect(files.length).to.be.greaterThan(0);
        // Scanned by grep in its own process: closing a descriptor of the database file here would drop
        // this process's SQLite locks (POSIX fcntl semantics) and corrupt its view of the WAL.
        for (const token of tokens) {
          const grep = spawnSync('grep', ['-c', '-F', '-a', '-e', token, ...files], { encoding: 'utf8' });
          // A journal file SQLite makes and removes for a moment may vanish between the listing and the scan
          // (grep then exits 2 naming it): what counts is that no file grep read holds the token.
          const vanished = grep.stderr.split('\n').filter((line) => line && !line.endsWith('No such file or directory'));
          expect(vanished, grep.stderr).to.deep.equal([]);
          const counts = grep.stdout
            .trim()
            .split('\n')
            .map((line) => Number(line.slice(line.lastIndexOf(':') + 1)));
          expect(
            counts.every((count) => count === 0),
            grep.stdout,
          ).to.equal(true);
        }
      }
      for (const token of tokens) expect(gateway!.output()).not.to.include(token);
    });

    it('accepts every stored session after a start, also past 5,000 rows, with creation-millisecond ties', async () => {
      await s.bed.db('sessions').delete();
      const now = Date.now();
      const tokens = Array.from({ length: 12_003 }, () => randomBytes(32).toString('base64url'));
      const rows = tokens.map((token, i) => ({
        token_hash: createHash('sha256').update(token).digest('hex'),
        user_id: s.ids.hana,
        // Runs of three sessions share a millisecond, so page boundaries fall inside ties.
        created_at: now - 60_000 + Math.floor(i / 3),
        last_used_at: now,
        expires_at: now + 600_000,
        login_seq: i + 1,
      }));
      await s.bed.db.batchInsert('sessions', rows, 500);
      const auth = await start({ max_per_user: 20_000 });
      expect(gateway!.logs.find((record) => record.msg === 'sessions stored')?.count).to.equal(12_003);
      for (const index of [0, 4_999, 5_000, 5_001, 10_000, 12_002]) {
        expect((await auth.status(tokens[index]!)).status, String(index)).to.equal(200);
      }
    });

    it('with sessions.persist=false ends every session at a restart', async () => {
      await s.bed.db('sessions').delete();
      let auth = await start({ persist: false });
      const token = await login();
      expect((await auth.status(token)).status).to.equal(200);
      await gateway!.stop('SIGTERM');
      auth = await start({ persist: false });
      expect(gateway!.logs.map((record) => record.msg)).to.include('sessions cleared at start (sessions.persist is false)');
      expect((await auth.status(token)).status).to.equal(401);
      expect(await s.bed.db('sessions').select('token_hash')).to.have.length(0);
    });

    it('stores times as epoch milliseconds that match the API to the millisecond', async () => {
      const auth = await start();
      const before = Date.now();
      const token = await login();
      const status = (await auth.status(token)).body.data;
      const row = await s.bed.db('sessions').orderBy('created_at', 'desc').first();
      for (const column of ['created_at', 'last_used_at', 'expires_at']) {
        expect(Number.isInteger(Number(row[column])), column).to.equal(true);
        expect(new Date(Number(row[column])).toISOString()).to.equal(status[column]);
      }
      expect(Number(row.created_at)).to.be.within(before - 1000, Date.now() + 1000);
    });
  });
}
