import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { repoRoot } from '../support/paths.js';
import { RELEASE_PACKAGES } from './release-build.js';

const json = (file: string) => JSON.parse(readFileSync(path.join(repoRoot, file), 'utf8')) as { version: string };

// The release's file names, `tkgate --version` and the start-up line come from packages/cli/package.json
// (release.test.ts checks the files and the start-up line of the built release); the rest must agree.
describe('one version', () => {
  const version = json('packages/cli/package.json').version;

  it('is every package, the workspace and lerna', () => {
    for (const file of ['package.json', 'lerna.json', ...RELEASE_PACKAGES.map((dir) => `${dir}/package.json`)])
      expect(json(file).version, file).to.equal(version);
  });

  it('is what tkgate --version prints, the changelog heads with and the README installs', async () => {
    const shown = await runCli(['--version']);
    expect(shown.stdout).to.equal(`tkgate ${version}\n`);
    const changelog = readFileSync(path.join(repoRoot, 'CHANGELOG.md'), 'utf8');
    expect(changelog.split('\n').find((line) => line.startsWith('## '))).to.match(new RegExp(`^## ${version.replaceAll('.', '\\.')}\\b`));
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    expect(readme).to.include(`tkgate-${version}-linux-x64.tar.gz`).and.include(`tkgate_${version}_amd64.deb`);
  });
});
