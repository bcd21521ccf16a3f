import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '../support/paths.js';

const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');

describe('README: what a new user reads first holds', () => {
  it("names every table of core's migrations (and knex's two) in its Database section", () => {
    const dir = path.join(repoRoot, 'packages/core/src/db/migrations');
    const tables = readdirSync(dir).flatMap((file) =>
      [...readFileSync(path.join(dir, file), 'utf8').matchAll(/createTable\('([a-z_]+)'/g)].map((match) => match[1]!),
    );
    expect(tables.length).to.be.greaterThan(10);
    const database = readme.slice(readme.indexOf('## Database'), readme.indexOf('\n## ', readme.indexOf('## Database') + 5));
    for (const table of [...tables, 'tkgate_migrations', 'tkgate_migrations_lock']) expect(database, table).to.include(`\`${table}\``);
  });

  it('says npm ci takes a few minutes, not about a minute', () => {
    expect(readme).not.to.match(/about a minute/);
    expect(readme).to.match(/`npm ci` builds everything and takes a few minutes/);
  });

  it("creates notes.yaml's table in the container quick start, and never says a broken toolkit file stops the start", () => {
    const container = readme.slice(readme.indexOf('## Run it in a container'), readme.indexOf('\n## ', readme.indexOf('## Run it in a container') + 5));
    const setup = container.search(/tkgate:[\d.]+ example setup/);
    expect(setup, 'example setup in the quick start').to.be.greaterThan(-1);
    expect(setup, 'before the gateway starts').to.be.lessThan(container.indexOf('podman run -d'));
    expect(readme).not.to.match(/broken (toolkit )?file stops the start/);
  });

  it('never offers the @tkgate packages from the npm registry, which does not have them', () => {
    expect(readme).not.to.match(/npm install (-g )?@tkgate|Any npm package/);
    expect(readme).to.match(/not on the npm registry yet/);
  });

  it('draws every tracked top-level directory, package and doc in its Layout', () => {
    const layout = readme.slice(readme.indexOf('## Layout'), readme.indexOf('```', readme.indexOf('```', readme.indexOf('## Layout')) + 3));
    const tracked = execFileSync('git', ['ls-files'], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\n');
    const topDirectories = [...new Set(tracked.filter((file) => file.includes('/') && !file.startsWith('.')).map((file) => file.split('/')[0]!))];
    expect(topDirectories).to.include.members(['packages', 'deploy', 'docs']);
    for (const dir of topDirectories) expect(layout, dir).to.match(new RegExp(`^${dir}/`, 'm'));
    for (const pkg of readdirSync(path.join(repoRoot, 'packages'))) expect(layout, pkg).to.match(new RegExp(`^packages/${pkg}\\b`, 'm'));
    expect(layout).to.match(/^Containerfile /m);
    for (const doc of readdirSync(path.join(repoRoot, 'docs')).filter((name) => name.endsWith('.md'))) expect(layout, doc).to.include(doc);
  });
});
