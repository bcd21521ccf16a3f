import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The test sources a spec of the build names (`build/test/x/*.test.js` -> test/x/*.test.ts). */
function sourcesOf(spec: string): string[] {
  const source = spec.replace(/^build\//, '').replace(/\.js$/, '.ts');
  if (!source.includes('*')) return existsSync(path.join(root, source)) ? [source] : [];
  const [base] = source.split('*');
  const dir = path.join(root, base!.replace(/\/[^/]*$/, ''));
  const pattern = new RegExp(
    `^${source
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\*\*\//g, '(.*/)?')
      .replace(/\*/g, '[^/]*')}$`,
  );
  const all = (at: string): string[] =>
    readdirSync(at, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? all(path.join(at, entry.name)) : [path.join(at, entry.name)]));
  return existsSync(dir)
    ? all(dir)
        .map((file) => path.relative(root, file))
        .filter((file) => pattern.test(file))
    : [];
}

/** A mocha spec list names a file that is gone (renamed, deleted): mocha only warns and runs the rest, so it fails here. */
describe('unit: the test lists name test files that exist', () => {
  it('.mocharc.fast.json (npm run test:fast)', () => {
    const { spec } = JSON.parse(readFileSync(path.join(root, '.mocharc.fast.json'), 'utf8')) as { spec: string[] };
    expect(spec.length).to.be.greaterThan(5);
    expect(spec.filter((entry) => sourcesOf(entry).length === 0)).to.deep.equal([]);
  });

  it("scripts/run-tests.js's serial list (npm test)", () => {
    const script = readFileSync(path.join(root, 'scripts/run-tests.js'), 'utf8');
    const serial = [...script.slice(script.indexOf('const SERIAL')).matchAll(/'(build\/test\/[^']+)'/g)].map((match) => match[1]!);
    expect(serial.length).to.be.greaterThan(2);
    expect(serial.filter((entry) => sourcesOf(entry).length === 0)).to.deep.equal([]);
  });

  it('would see a missing one (the guard guards)', () => {
    expect(sourcesOf('build/test/pipeline/direct-toolkit.test.js')).to.deep.equal([]);
    expect(sourcesOf('build/test/unit/**/*.test.js')).to.include('test/unit/test-lists.test.ts');
    expect(sourcesOf('build/test/unit/layers.test.js')).to.deep.equal(['test/unit/layers.test.ts']);
  });
});
