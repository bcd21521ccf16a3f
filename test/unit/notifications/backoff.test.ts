import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { backoffMs } = await coreModule<typeof import('../../../packages/core/dist/notifications/notification-deliverer.js')>(
  'notifications/notification-deliverer.js',
);

describe('unit: notifications/backoff', () => {
  it('waits about 10s, 1m, 5m, 30m, 2h, 6h, then 12h each, from retry_base 10s', () => {
    const middle = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((attempt) => backoffMs(attempt, 10_000, middle) / 1000)).to.deep.equal([
      10, 60, 300, 1800, 7200, 21600, 43200, 43200, 43200,
    ]);
  });

  it('jitters each wait within ±20 %', () => {
    expect(backoffMs(2, 10_000, () => 0)).to.equal(48_000);
    expect(backoffMs(2, 10_000, () => 1)).to.equal(72_000);
  });
});
