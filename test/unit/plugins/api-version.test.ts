import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { checkApiRange, describeRange, PLUGIN_API } =
  await coreModule<typeof import('../../../packages/core/dist/plugins/api-version.js')>('plugins/api-version.js');

describe('unit: plugin API ranges (plugins/api-version.ts)', () => {
  const { major, minor } = PLUGIN_API;

  it('accepts the same major with a minor no newer than the host', () => {
    for (const range of [
      `^${major}`,
      `^${major}.0`,
      `${major}.x`,
      `${major}.*`,
      `^${major}.${minor}`,
      major,
      { major },
      { major, minor },
      `^0.1 || ^${major}.0`,
    ]) {
      expect(checkApiRange(range), describeRange(range)).to.equal('compatible');
    }
  });

  it('refuses another major and a newer minor', () => {
    for (const range of [`^${major + 1}`, `^${major}.${minor + 1}`, { major, minor: minor + 1 }, major + 1, '^0.9']) {
      expect(checkApiRange(range), describeRange(range)).to.equal('incompatible');
    }
  });

  it('calls anything else unreadable, and describes a range as it was written', () => {
    for (const range of ['>=1', '1.2.3-beta', 'latest', '', -1, 1.5, null, undefined, { minor: 1 }, [1]]) {
      expect(checkApiRange(range), describeRange(range)).to.equal('unreadable');
    }
    expect(describeRange({ major: 1 })).to.equal('{ major: 1 }');
    expect(describeRange({ major: 1, minor: 2 })).to.equal('{ major: 1, minor: 2 }');
    expect(describeRange('^1.1')).to.equal('^1.1');
  });
});
