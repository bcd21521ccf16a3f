import { expect } from 'chai';
import { RE2JS } from 're2js';
import { coreModule } from '../../support/core-module.js';

const { longestMatch } = await coreModule<typeof import('../../../packages/core/dist/toolkits/pattern-bound.js')>('toolkits/pattern-bound.js');

describe('unit: the longest value a field pattern can match (toolkits/pattern-bound.ts)', () => {
  const cases: Array<[string, number | undefined]> = [
    ['^[a-z]{1,20}$', 20],
    ['\\A[a-z]{2,5}\\z', 5],
    ['^\\d{3}-\\d{4}$', 8],
    ['^(?:[a-z]{1,30}|[0-9]{1,50})$', 50],
    ['^a{2}(b|c){0,3}$', 5],
    ['(?i)^abc$', 3],
    ['^$', 0],
    // Not holding the whole value, or repeating without end: no bound of its own.
    ['[a-z]{1,20}', undefined],
    ['^[a-z]{1,20}', undefined],
    ['[a-z]{1,20}$', undefined],
    ['^a$|b', undefined],
    ['(?m)^a$', undefined],
    ['^a*$', undefined],
    ['^(?:[a-z]{1,1000}\\s?)*$', undefined],
  ];
  for (const [pattern, longest] of cases) {
    it(`${pattern}: ${longest ?? 'unbounded'}`, () => {
      expect(longestMatch(RE2JS.compile(pattern))).to.equal(longest);
    });
  }
});
