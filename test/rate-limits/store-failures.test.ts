import { createServer } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { startInProcess } from '../support/gateway-in-process.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { passwordOf } from '../support/fixtures.js';
import { scrape, valueOf } from '../support/ops.js';
import { refuseRateLimitCounts } from '../support/refused-writes.js';
import { withDatabase } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

/** A port nothing listens on: taken from the system, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const dir = toolkitDir({
  'st.yaml': {
    name: 'st',
    type: 'app',
    endpoints: [echoEndpoint({ path: 'limited', rate_limit: { limit: 100, window: '1m' } }), echoEndpoint({ path: 'free' })],
  },
});

/**
 * docs/rate-limits.md: a store that cannot answer gives 503 unavailable (deny, the default) or lets the call
 * through, logged and counted (allow); an endpoint without a limit never asks it.
 */
function storeFailureCases(setup: () => Promise<{ db: Record<string, unknown>; rateLimits: Record<string, unknown> }>) {
  const gateways: Partial<Record<'deny' | 'allow', GatewayProcess>> = {};
  before(async () => {
    const { db, rateLimits } = await setup();
    for (const onFailure of ['deny', 'allow'] as const)
      gateways[onFailure] = await startInProcess({
        config: { db, toolkits: { dir, watch: false }, plugins: pluginsWithTestFunctions, rate_limits: { ...rateLimits, on_store_failure: onFailure } },
      });
  });
  after(async () => {
    for (const gateway of Object.values(gateways)) await gateway.stop();
  });
  const client = async (gateway: GatewayProcess) => toolkitClient(gateway.base, await loginToken(gateway.base, 'ann', passwordOf('ann')));

  it('deny: 503 unavailable with Retry-After and the policy header; an unlimited endpoint still answers', async () => {
    const ann = await client(gateways.deny!);
    const refused = await ann.get('st', 'limited');
    expect(refused.status).to.equal(503);
    expect(refused.body.error.code).to.equal('unavailable');
    expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
    expect(rateLimitHeaders(refused)).to.deep.equal({ policy: { name: 'st/limited', q: 100, w: 60 } });
    expect((await ann.get('st', 'free')).status).to.equal(200);
    const { samples } = await scrape(gateways.deny!);
    expect(valueOf(samples, 'tkgate_rate_limit_store_failures_total', { outcome: 'denied' })).to.be.at.least(1);
  });

  it('allow: the call goes through, and the failure is logged and counted', async () => {
    const ann = await client(gateways.allow!);
    const allowed = await ann.get('st', 'limited');
    expect(allowed.status, JSON.stringify(allowed.body)).to.equal(200);
    expect(allowed.body.data.payload).to.deep.equal({});
    const { samples } = await scrape(gateways.allow!);
    expect(valueOf(samples, 'tkgate_rate_limit_store_failures_total', { outcome: 'allowed' })).to.be.at.least(1);
    expect(gateways.allow!.logs.some((line) => line.level === 'warn' && String(line.msg).startsWith('rate-limit store did not answer'))).to.equal(true);
  });
}

describe('rate limits: Redis unreachable', function () {
  this.timeout(60_000);
  const s = withDatabase(
    dialects.find((dialect) => dialect.name === 'sqlite')!,
    [{ username: 'ann' }],
  );
  storeFailureCases(async () => ({ db: s.bed.dbConfig, rateLimits: { store: 'redis', redis_url: `redis://127.0.0.1:${await closedPort()}/0` } }));
});

for (const dialect of dialects) {
  describe(`rate limits: the database refuses to count (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withDatabase(dialect, [{ username: 'ann' }]);
    let drop: (() => Promise<void>) | undefined;
    storeFailureCases(async () => {
      const refused = await refuseRateLimitCounts(s.bed);
      drop = refused.drop;
      return { db: refused.dbConfig, rateLimits: { store: 'database' } };
    });
    after(() => drop?.());
  });
}
