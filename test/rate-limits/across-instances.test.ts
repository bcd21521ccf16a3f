import { expect } from 'chai';
import { dialects, type DialectTarget } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient, type Reply } from '../support/http.js';
import { withDatabase } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { awayFromWindowEnd } from './rate-limit-headers.js';

const WINDOW_S = 3600;

/**
 * docs/rate-limits.md, "Several gateways" (exact across instances): three `tkgate start` processes on one store, one of them with
 * two workers, take concurrent bursts; the store admits exactly `limit` per budget and window, whatever the
 * burst. The toolkit's name is new each run: Redis outlives the test, and a budget is keyed by its name.
 */
function acrossInstances(dialect: DialectTarget, rateLimits: Record<string, unknown>) {
  const name = `burst${process.pid}-${Date.now() % 1_000_000}`;
  const dir = toolkitDir({
    'burst.yaml': {
      name,
      type: 'app',
      endpoints: [
        echoEndpoint({ path: 'each', rate_limit: { limit: 7, window: '1h', per: 'user' } }),
        echoEndpoint({ path: 'all', rate_limit: { limit: 11, window: '1h', per: 'endpoint' } }),
      ],
    },
  });
  const s = withDatabase(dialect, [{ username: 'ann' }, { username: 'ben' }]);
  const gateways: GatewayProcess[] = [];
  before(async () => {
    const config = { db: s.bed.dbConfig, toolkits: { dir, watch: false }, plugins: pluginsWithTestFunctions, rate_limits: rateLimits };
    gateways.push(
      ...(await Promise.all([startGateway({ config }), startGateway({ config }), startGateway({ config: { ...config, server: { port: 0, workers: 2 } } })])),
    );
  });
  after(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
  });
  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const gateway of gateways) process.stderr.write(`--- gateway on ${gateway.port}:\n${gateway.output().slice(-3000)}\n`);
  });
  beforeEach(() => awayFromWindowEnd(WINDOW_S));

  /** `count` calls at once, spread round-robin over the gateways, each with one of the tokens. */
  const burst = async (path: string, count: number, tokens: string[]): Promise<number[]> => {
    const clients = gateways.flatMap((gateway) => tokens.map((token) => toolkitClient(gateway.base, token)));
    const replies: Reply[] = await Promise.all(Array.from({ length: count }, (_, i) => clients[i % clients.length]!.get(name, path)));
    return replies.map((reply) => reply.status);
  };
  const tally = (statuses: number[]) => ({ admitted: statuses.filter((s) => s === 200).length, refused: statuses.filter((s) => s === 429).length });

  it('per user: a burst of 45 calls of one user over three instances (one with 2 workers) admits exactly 7; another user has their own 7', async () => {
    const ann = await loginToken(gateways[0]!.base, 'ann', passwordOf('ann'));
    expect(tally(await burst('each', 45, [ann]))).to.deep.equal({ admitted: 7, refused: 38 });
    expect(tally(await burst('each', 6, [ann]))).to.deep.equal({ admitted: 0, refused: 6 });
    const ben = await loginToken(gateways[1]!.base, 'ben', passwordOf('ben'));
    expect(tally(await burst('each', 12, [ben]))).to.deep.equal({ admitted: 7, refused: 5 });
  });

  it('per endpoint: a burst of 60 calls of two users over every instance admits exactly 11 between them', async () => {
    const tokens = [await loginToken(gateways[2]!.base, 'ann', passwordOf('ann')), await loginToken(gateways[0]!.base, 'ben', passwordOf('ben'))];
    expect(tally(await burst('all', 60, tokens))).to.deep.equal({ admitted: 11, refused: 49 });
  });
}

for (const dialect of dialects) {
  describe(`rate limits across instances, database store (${dialect.name})`, function () {
    this.timeout(120_000);
    acrossInstances(dialect, { store: 'database' });
  });
}

describe('rate limits across instances, Redis store', function () {
  this.timeout(120_000);
  acrossInstances(
    dialects.find((dialect) => dialect.name === 'sqlite')!,
    { store: 'redis', redis_url: 'redis://127.0.0.1:6379/0' },
  );
});
