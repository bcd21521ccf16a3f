import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const settings = await coreModule<typeof import('../../../packages/core/dist/config/settings.js')>('config/settings.js');
const about = { doc: 'a setting' };

describe('unit: setting kinds (config/settings.ts)', () => {
  it('integer and port check the range and read whole numbers from the environment', () => {
    const workers = settings.integer(1, about, { min: 1 });
    expect(() => workers.check(2)).not.to.throw();
    expect(() => workers.check(0)).to.throw('must be a whole number of at least 1');
    expect(() => workers.check(1.5)).to.throw('must be a whole number of at least 1');
    expect(() => workers.check('2')).to.throw();
    expect(workers.fromEnv(' 3 ')).to.equal(3);
    expect(workers.fromEnv('3x')).to.equal('3x');
    const port = settings.port(8080, about);
    expect(() => port.check(65535)).not.to.throw();
    expect(() => port.check(65536)).to.throw('must be a whole number from 0 to 65535');
  });

  it('flag takes true, false, 1 or 0 from the environment, in any case, and nothing else', () => {
    const flag = settings.flag(false, about);
    expect(['TRUE', ' 1 ', 'false', '0'].map((text) => flag.fromEnv(text))).to.deep.equal([true, true, false, false]);
    expect(() => flag.fromEnv('yes')).to.throw('must be true, false, 1 or 0');
    expect(() => flag.check('true')).to.throw('must be true or false');
  });

  it('duration checks its limit and is used in milliseconds under <key>_ms', () => {
    const timeout = settings.duration('30s', about, { maxMs: 60_000 });
    expect(timeout.suffix).to.equal('_ms');
    expect(timeout.normalise('2m', '/')).to.equal(120_000);
    expect(() => timeout.check('2m')).to.throw('must be at most 60s');
    expect(() => timeout.check('soon')).to.throw(/must be a duration/);
    expect(timeout.fromEnv('5')).to.equal(5);
    expect(timeout.fromEnv('5s')).to.equal('5s');
  });

  it('oneOf, filePath and stringList', () => {
    const client = settings.oneOf(['sqlite', 'mysql'], 'sqlite', about);
    expect(() => client.check('postgres')).to.throw('must be one of sqlite, mysql');
    const dir = settings.filePath('toolkits', about);
    expect(dir.normalise('toolkits', '/srv/tkgate')).to.equal('/srv/tkgate/toolkits');
    expect(() => dir.check('')).to.throw('must be a path');
    const list = settings.stringList([], about);
    expect(() => list.check(['a', ''])).to.throw('must be a list of strings');
  });

  it('originList takes origins or "*" alone, naming the entry it refuses', () => {
    const origins = settings.originList(about);
    expect(() => origins.check(['https://tools.example.org', 'http://localhost:8080'])).not.to.throw();
    expect(() => origins.check(['*'])).not.to.throw();
    expect(() => origins.check(['*', 'https://a.example'])).to.throw('"*" must be the only entry');
    expect(() => origins.check(['https://tools.example.org/'])).to.throw('"https://tools.example.org/" is not an origin');
    expect(() => origins.check('https://a.example')).to.throw(/must be a list of origins/);
  });
});
