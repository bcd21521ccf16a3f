import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { call } from '../support/http.js';
import { loginUrl, RETURN_TO, withSso } from './sso-suite.js';

const pendingRows = async (db: any): Promise<number> => Number((await db('oidc_pending_logins').count({ n: '*' }).first()).n);

for (const dialect of dialects) {
  describe(`single sign-on bounds what unauthenticated login starts store (${dialect.name})`, function () {
    this.timeout(120_000);
    // Behind a trusted proxy, so the test can speak for several client addresses.
    const s = withSso(dialect, { config: { sessions: { cache_ttl: '1s' }, server: { trust_proxy: true } } });
    const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });

    it('a return_to longer than 2 KiB is 400 invalid_return_to naming the field, and nothing is stored', async () => {
      const before = await pendingRows(s.bed.db);
      const long = `${RETURN_TO}?q=${'x'.repeat(2048)}`;
      const reply = await call('GET', loginUrl(s.base, long), from('198.51.100.1'));
      expect(reply.status).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_return_to');
      expect(reply.body.error.details[0]).to.include({ field: 'return_to', rule: 'max_length' });
      expect(await pendingRows(s.bed.db)).to.equal(before);
      const justUnder = await fetch(loginUrl(s.base, `${RETURN_TO}?q=${'x'.repeat(2048 - RETURN_TO.length - 3)}`), {
        redirect: 'manual',
        ...from('198.51.100.1'),
      });
      expect(justUnder.status).to.equal(302);
    });

    it('a flood of login starts from one address leaves a bounded number of pending logins, then 429 rate_limited with Retry-After', async () => {
      const before = await pendingRows(s.bed.db);
      const start = () => fetch(loginUrl(s.base), { redirect: 'manual', ...from('203.0.113.7') });
      let admitted = 0;
      const refused: Response[] = [];
      for (let i = 0; i < 150; i++) {
        const reply = await start();
        if (reply.status === 302) admitted++;
        else refused.push(reply);
      }
      // 60 per address and 10-minute window: 60, or up to 120 should the flood straddle two windows.
      expect(admitted).to.be.within(60, 120);
      expect(refused).to.have.length(150 - admitted);
      expect(refused[0]!.status).to.equal(429);
      expect(((await refused[0]!.json()) as any).error.code).to.equal('rate_limited');
      expect(Number(refused[0]!.headers.get('retry-after'))).to.be.within(1, 600);
      expect(await pendingRows(s.bed.db)).to.equal(before + admitted);
      // Another address is not held back by that one.
      expect((await fetch(loginUrl(s.base), { redirect: 'manual', ...from('203.0.113.8') })).status).to.equal(302);
    });
  });
}
