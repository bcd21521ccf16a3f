import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { call, toolkitClient, type Reply } from '../support/http.js';
import { scrape, valueOf } from '../support/ops.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir, writeToolkit, type ToolkitDoc } from '../support/toolkit-files.js';
import { awayFromWindowEnd, rateLimitHeaders } from './rate-limit-headers.js';

const WINDOW_S = 3600;
const limit = (n: number, per: string) => ({ limit: n, window: '1h', per });
const echo = (name: string, extra: Record<string, unknown> = {}) => echoEndpoint({ path: name, ...extra });

const work = tempDir('tkgate-rate-');
const marker = path.join(work, 'ran');

/** A toolkit of limited endpoints, one per kind of budget, an exec endpoint that leaves a marker, and one without a limit. */
const rl = (): ToolkitDoc => ({
  name: 'rl',
  type: 'app',
  endpoints: [
    echo('mine', { rate_limit: limit(3, 'user') }),
    echo('shared', { rate_limit: limit(3, 'endpoint') }),
    echo('by-client', { rate_limit: limit(2, 'client') }),
    echo('plain'),
    {
      path: 'run',
      method: 'POST',
      type: 'exec',
      command: ['/bin/sh', '-c', 'touch "$0"; echo "{}"', marker],
      client_filter: { required_fields: ['n'], field_rules: { n: { type: 'integer' } } },
      rate_limit: limit(1, 'user'),
    },
  ],
});
/** A toolkit-wide budget shared by a and b; `own` has its own, which replaces it. */
const kit = (): ToolkitDoc => ({
  name: 'kit',
  type: 'app',
  rate_limit: limit(2, 'user'),
  endpoints: [echo('a'), echo('b'), echo('own', { rate_limit: { limit: 5, window: 60 } })],
});
/** `version` names an unlimited endpoint that shows which version of the file is live (without counting against x). */
const hot = (n: number, version = 'v1'): ToolkitDoc => ({
  name: 'hot',
  type: 'app',
  endpoints: [echo('x', { rate_limit: limit(n, 'endpoint') }), echo(version)],
});

const statuses = (replies: Reply[]) => replies.map((reply) => reply.status);

/** Rate limits (docs/rate-limits.md) through HTTP: budgets per user, client and endpoint, the headers, a refused call runs nothing. */
for (const dialect of dialects) {
  describe(`rate limits (${dialect.name})`, function () {
    this.timeout(60_000);
    const dir = toolkitDir({ 'rl.yaml': rl(), 'kit.yaml': kit(), 'hot.yaml': hot(2) });
    const s = withGateway(
      dialect,
      [{ username: 'ann' }, { username: 'ben' }, { username: 'cy' }],
      { server: { trust_proxy: true, cors: { origins: ['https://app.example'] } } },
      { toolkitsDir: dir },
    );
    let ann: ReturnType<typeof toolkitClient>;
    let ben: ReturnType<typeof toolkitClient>;
    before(async () => {
      ann = toolkitClient(s.gateway.base, await s.login('ann'));
      ben = toolkitClient(s.gateway.base, await s.login('ben'));
    });
    beforeEach(() => awayFromWindowEnd(WINDOW_S));

    it('per user: each user has a budget of its own, shared by their sessions; over it, 429 rate_limited with Retry-After', async () => {
      const first = [await ann.get('rl', 'mine'), await ann.get('rl', 'mine'), await ann.post('rl', 'mine', {})];
      expect(statuses(first)).to.deep.equal([200, 200, 200]);
      expect(first.map((reply) => rateLimitHeaders(reply)!.state!.r)).to.deep.equal([2, 1, 0]);
      const headers = rateLimitHeaders(first[0]!)!;
      expect(headers.policy).to.deep.equal({ name: 'rl/mine', q: 3, w: WINDOW_S });
      expect(headers.state!.name).to.equal('rl/mine');
      expect(headers.state!.t).to.be.within(1, WINDOW_S);

      const otherSession = toolkitClient(s.gateway.base, await s.login('ann'));
      const refused = await otherSession.get('rl', 'mine');
      expect(refused.status).to.equal(429);
      expect(refused.body.error.code).to.equal('rate_limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, WINDOW_S);
      expect(rateLimitHeaders(refused)!.state).to.deep.include({ name: 'rl/mine', r: 0 });
      expect(refused.body.error.details).to.deep.include({ policy: 'rl/mine', limit: 3, window_s: WINDOW_S });

      expect((await ben.get('rl', 'mine')).status).to.equal(200);
      expect(rateLimitHeaders(await ben.get('rl', 'mine'))!.state!.r).to.equal(1);
    });

    it('per endpoint: one budget for every caller', async () => {
      expect(statuses([await ann.get('rl', 'shared'), await ben.get('rl', 'shared'), await ann.get('rl', 'shared')])).to.deep.equal([200, 200, 200]);
      expect((await ben.get('rl', 'shared')).status).to.equal(429);
      const cy = toolkitClient(s.gateway.base, await s.login('cy'));
      expect((await cy.get('rl', 'shared')).status).to.equal(429);
    });

    it('per client: one budget per client address (X-Forwarded-For behind a trusted proxy), whoever calls from it', async () => {
      const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });
      expect((await ann.get('rl', 'by-client', {}, from('10.0.0.1'))).status).to.equal(200);
      expect((await ben.get('rl', 'by-client', {}, from('10.0.0.1'))).status).to.equal(200);
      expect((await ann.get('rl', 'by-client', {}, from('10.0.0.1'))).status).to.equal(429);
      expect((await ben.get('rl', 'by-client', {}, from('10.0.0.1'))).status).to.equal(429);
      expect((await ben.get('rl', 'by-client', {}, from('10.0.0.2'))).status).to.equal(200);
    });

    it('a refused call runs nothing: 429 even with an invalid payload, and the command does not run', async () => {
      rmSync(marker, { force: true });
      const admitted = await ann.post('rl', 'run', { n: 1 });
      expect(admitted.status, JSON.stringify(admitted.body)).to.equal(200);
      expect(existsSync(marker)).to.equal(true);
      rmSync(marker);
      const invalid = await ann.post('rl', 'run', { n: 'not a number' });
      expect(invalid.status).to.equal(429);
      expect(invalid.body.error.code).to.equal('rate_limited');
      const unparseable = await ann.post('rl', 'run', undefined, { rawBody: '{"n": ', headers: { 'content-type': 'application/json' } });
      expect(unparseable.status).to.equal(429);
      expect((await ann.post('rl', 'run', { n: 2 })).status).to.equal(429);
      expect(existsSync(marker)).to.equal(false);
    });

    it('an error after the check carries the headers too, and the call counted', async () => {
      const invalid = await ben.post('rl', 'run', { n: 'x' });
      expect(invalid.status).to.equal(400);
      expect(invalid.body.error.code).to.equal('invalid_payload');
      expect(rateLimitHeaders(invalid)).to.deep.equal({
        policy: { name: 'rl/run', q: 1, w: WINDOW_S },
        state: { name: 'rl/run', r: 0, t: rateLimitHeaders(invalid)!.state!.t },
      });
      expect((await ben.post('rl', 'run', { n: 1 })).status).to.equal(429);
    });

    it("a toolkit's rate_limit is one budget for its endpoints; an endpoint's own replaces it", async () => {
      const a = await ann.get('kit', 'a');
      expect(rateLimitHeaders(a)!.policy).to.deep.equal({ name: 'kit', q: 2, w: WINDOW_S });
      expect((await ann.get('kit', 'b')).status).to.equal(200);
      expect((await ann.get('kit', 'b')).status).to.equal(429);
      expect((await ann.get('kit', 'a')).status).to.equal(429);
      const own = await ann.get('kit', 'own');
      expect(own.status).to.equal(200);
      expect(rateLimitHeaders(own)).to.deep.include({ policy: { name: 'kit/own', q: 5, w: 60 } });
      expect((await ben.get('kit', 'a')).status).to.equal(200);
    });

    it('an endpoint without a limit answers without rate-limit headers and is never refused', async () => {
      for (let i = 0; i < 5; i++) {
        const reply = await ann.get('rl', 'plain');
        expect(reply.status).to.equal(200);
        expect(rateLimitHeaders(reply)).to.equal(undefined);
      }
    });

    it('CORS exposes the rate-limit headers to browser pages', async () => {
      const reply = await ann.get('rl', 'mine', {}, { headers: { origin: 'https://app.example' } });
      const exposed = (reply.headers.get('access-control-expose-headers') ?? '').split(',').map((name) => name.trim().toLowerCase());
      expect(exposed).to.include.members(['ratelimit-policy', 'ratelimit', 'retry-after']);
    });

    it('tkgate_rate_limited_total counts refused calls by route', async () => {
      const { samples } = await scrape(s.gateway);
      expect(valueOf(samples, 'tkgate_rate_limited_total', { route: 'tk/app/rl/mine' })).to.be.at.least(1);
      expect(valueOf(samples, 'tkgate_rate_limited_total', { route: 'tk/app/rl/run' })).to.be.at.least(3);
    });

    it('OpenAPI: a limited endpoint lists 429 and the headers on every answer; an unlimited one neither', async () => {
      const doc = (await call('GET', `${s.gateway.base}/openapi.json`, { token: await s.login('ann') })).body;
      const validated = await validate(structuredClone(doc) as Parameters<typeof validate>[0]);
      expect(validated.valid, JSON.stringify(validated)).to.equal(true);
      const mine = doc.paths['/tk/app/rl/mine'].get;
      expect(mine['x-rate-limit']).to.deep.equal({ policy: 'rl/mine', limit: 3, window_s: WINDOW_S, per: 'user' });
      expect(mine.responses['429'].headers).to.have.keys('X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'Retry-After');
      expect(mine.responses['200'].headers).to.have.keys('X-Request-Id', 'RateLimit-Policy', 'RateLimit');
      expect(doc.paths['/tk/app/kit/a'].get['x-rate-limit'].policy).to.equal('kit');
      const plain = doc.paths['/tk/app/rl/plain'].get;
      expect(plain.responses).to.not.have.property('429');
      expect(plain.responses['200'].headers).to.have.keys('X-Request-Id');
    });

    it('hot reload: a changed limit applies at once to the budget so far; an unrelated reload keeps the budget', async () => {
      expect(statuses([await ann.get('hot', 'x'), await ann.get('hot', 'x'), await ann.get('hot', 'x')])).to.deep.equal([200, 200, 429]);
      writeToolkit(dir, 'other.yaml', { name: 'other', type: 'app', endpoints: [echo('y')] });
      await eventually('the new toolkit is live', async () => (await ann.get('other', 'y')).status === 200);
      expect((await ann.get('hot', 'x')).status).to.equal(429);
      writeToolkit(dir, 'hot.yaml', hot(5, 'v2'));
      await eventually('the new limit is live', async () => (await ann.get('hot', 'v2')).status === 200);
      // 4 calls so far (2 admitted, 2 refused, all counted): a limit of 5 admits one more.
      const reloaded = await ann.get('hot', 'x');
      expect(rateLimitHeaders(reloaded)!.policy.q).to.equal(5);
      expect(reloaded.status).to.equal(200);
      expect((await ann.get('hot', 'x')).status).to.equal(429);
    });
  });
}
