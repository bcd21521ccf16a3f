import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { withDatabase } from '../support/suite.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, loginToken } from '../support/http.js';
import { createHash, randomBytes } from 'node:crypto';

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

for (const dialect of dialects) {
  describe(`per-user session maximum (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'erin' }, { username: 'frank' }, { username: 'gina' }]);
    let gateway: GatewayProcess;
    let auth: ReturnType<typeof authClient>;
    const login = (username: string) => loginToken(gateway.base, username, passwordOf(username));
    const rowsOf = (userId: number) => s.bed.db('sessions').where({ user_id: userId }).select('token_hash');

    afterEach(async () => {
      await gateway?.stop();
    });

    it('evicts the oldest session when a login would exceed the maximum', async () => {
      gateway = await startGateway({ config: { db: s.bed.dbConfig, sessions: { max_per_user: 3 } } });
      auth = authClient(gateway.base);
      const tokens = [];
      for (let i = 0; i < 5; i++) tokens.push(await login('erin'));
      const alive = [];
      for (const token of tokens) alive.push((await auth.status(token)).status);
      expect(alive).to.deep.equal([401, 401, 200, 200, 200]);
      expect((await rowsOf(s.ids.erin!)).map((r) => r.token_hash).sort()).to.deep.equal(tokens.slice(2).map(sha256).sort());
    });

    it('leaves exactly the maximum after 12 concurrent logins of one user', async () => {
      // Logins in flight count toward the failed-login limit until they succeed (docs/scaling.md): room for 12.
      const auth12 = { login_max_failures: 12 };
      gateway = await startGateway({ config: { db: s.bed.dbConfig, sessions: { max_per_user: 3 }, auth: auth12 } });
      auth = authClient(gateway.base);
      const tokens = await Promise.all(Array.from({ length: 12 }, () => login('frank')));
      const statuses = await Promise.all(tokens.map(async (token) => (await auth.status(token)).status));
      expect(statuses.filter((status) => status === 200)).to.have.length(3);
      const rows = await rowsOf(s.ids.frank!);
      expect(rows).to.have.length(3);
      const aliveHashes = tokens
        .filter((_, i) => statuses[i] === 200)
        .map(sha256)
        .sort();
      expect(rows.map((r) => r.token_hash).sort()).to.deep.equal(aliveHashes);
    });

    it('breaks ties of the same creation millisecond by login order, also after a reload', async () => {
      const now = Date.now();
      const tokens = Array.from({ length: 3 }, () => randomBytes(32).toString('base64url'));
      // Three stored sessions created in the same millisecond; the login sequence says which came first.
      await s.bed.db('sessions').insert(
        tokens.map((token, i) => ({
          token_hash: sha256(token),
          user_id: s.ids.gina,
          created_at: now,
          last_used_at: now,
          expires_at: now + 600_000,
          login_seq: [20, 10, 30][i],
        })),
      );
      gateway = await startGateway({ config: { db: s.bed.dbConfig, sessions: { max_per_user: 3 } } });
      auth = authClient(gateway.base);
      for (const token of tokens) expect((await auth.status(token)).status).to.equal(200);
      const fresh = await login('gina');
      const statuses = [];
      for (const token of [...tokens, fresh]) statuses.push((await auth.status(token)).status);
      // The one with login_seq 10 was first, so it is the one evicted.
      expect(statuses).to.deep.equal([200, 401, 200, 200]);
      const next = await login('gina');
      const after = [];
      for (const token of [...tokens, fresh, next]) after.push((await auth.status(token)).status);
      expect(after).to.deep.equal([401, 401, 200, 200, 200]);
    });
  });
}
