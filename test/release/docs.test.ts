import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { configurationReference } from '@tkgate/core';
import { repoRoot } from '../support/paths.js';

/** Every Markdown file of the repository's own docs (not node_modules, not build output). */
function markdownFiles(dir = repoRoot): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (['node_modules', 'build', 'dist', '.git'].includes(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

describe('docs/configuration.md', () => {
  it('is generated from the settings declaration (npm run docs:config)', () => {
    const result = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/config-docs.js'), '--check'], { cwd: repoRoot, encoding: 'utf8' });
    expect(result.status, result.stderr).to.equal(0);
  });

  it('has a row for every key, with its environment variable and what it accepts', () => {
    const page = readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const entries = configurationReference();
    expect(entries.length).to.be.greaterThan(25);
    for (const entry of entries) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${entry.key}\` |`));
      expect(row, entry.key).to.be.a('string');
      if (entry.env) expect(row, entry.key).to.include(`\`${entry.env}\``);
      expect(entry.accepts, entry.key).to.not.equal('');
    }
    expect(page).to.match(/\| `server\.port` \| `TKGATE_PORT` \| `8080` \| a whole number from 0 to 65535 \|/);
    expect(page).to.match(/\| `sessions\.cache_ttl` \| `TKGATE_SESSIONS_CACHE_TTL` \| `1s` \| a duration; at most 5s \|/);
  });
});

describe('the docs', () => {
  it('cite no file outside the repository (the design notes are not shipped)', () => {
    for (const file of markdownFiles()) {
      expect(readFileSync(file, 'utf8'), path.relative(repoRoot, file)).to.not.match(/\bSPEC(\.md)?\b/);
    }
  });
});
