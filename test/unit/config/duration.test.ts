import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { parseDuration } = await coreModule<typeof import('../../../packages/core/dist/config/duration.js')>('config/duration.js');

describe('unit: parseDuration (config/duration.ts)', () => {
  it('reads ms, s, m, h and d (audit.retention: 90d), with or without a space, and a plain number as seconds', () => {
    const cases: Array<[unknown, number]> = [
      ['500ms', 500],
      ['45s', 45_000],
      ['30m', 1_800_000],
      ['2h', 7_200_000],
      ['90d', 7_776_000_000],
      ['1.5s', 1500],
      [' 10 s ', 10_000],
      ['7', 7000],
      [0, 0],
      [0.25, 250],
    ];
    for (const [value, ms] of cases) expect(parseDuration(value), JSON.stringify(value)).to.equal(ms);
  });

  it('refuses anything else with one message naming the accepted forms', () => {
    for (const value of ['', 'fast', '-1s', '1w', '1e3', '1 s 2', -1, Number.NaN, Number.POSITIVE_INFINITY, null, undefined, {}, ['1s']]) {
      expect(() => parseDuration(value), JSON.stringify(value)).to.throw(/must be a duration such as "500ms"/);
    }
  });
});
