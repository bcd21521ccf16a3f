import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { repoRoot } from '../../support/paths.js';

/** The console's scripts and styles at most 150 KiB gzipped in all (docs/performance.md, "The console's size"). */
describe('console: size of the build', () => {
  it('keeps its scripts and styles under 150 KiB gzipped, each asset named by its hash', () => {
    const dir = path.join(repoRoot, 'packages/console/dist/public');
    const assets = readdirSync(dir).filter((name) => name.endsWith('.js') || name.endsWith('.css'));
    expect(assets.some((name) => name.endsWith('.js'))).to.equal(true);
    expect(assets.some((name) => name.endsWith('.css'))).to.equal(true);
    for (const name of assets) expect(name).to.match(/-[A-Z0-9]{8}\.(js|css)$/);
    const gzipped = assets.reduce((sum, name) => sum + gzipSync(readFileSync(path.join(dir, name)), { level: 9 }).length, 0);
    expect(gzipped).to.be.at.most(150 * 1024);
  });
});
