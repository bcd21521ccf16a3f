import { execFileSync, spawnSync } from 'node:child_process';
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

/** Every .ts and .js source under `dir` (not node_modules, not build output). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (['node_modules', 'build', 'dist', '.git'].includes(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|js|cjs)$/.test(entry.name) ? [full] : [];
  });
}

/** The text of every .ts file under `dir`. */
const sourceTexts = (dir: string): string[] =>
  sourceFiles(dir)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(file, 'utf8'));

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

  it('names no environment variable and no plugin setting the code does not read (the hand-written tables too)', () => {
    const page = readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const sourcesOf = (dir: string) => sourceTexts(path.join(repoRoot, dir));
    const code = [
      ...sourcesOf('packages/core/src'),
      ...sourcesOf('packages/cli/src'),
      ...['plugin-http', 'plugin-exec', 'plugin-internal'].flatMap((name) => sourcesOf(`plugins/${name}/src`)),
    ].join('\n');
    // `TKGATE_OIDC_<NAME>_CLIENT_SECRET`: the code builds it around the name, so each literal part must be there.
    const variables = [...new Set(page.match(/TKGATE_[A-Z0-9_<>]+/g))];
    expect(variables).to.include('TKGATE_CONFIG');
    const declared = new Set(configurationReference().map((entry) => entry.env));
    expect(variables.filter((name) => !declared.has(name) && !name.split(/<[A-Z]+>/).every((part) => code.includes(part)))).to.deep.equal([]);
    const pluginKeys = [...page.matchAll(/^\| `"@tkgate\/(plugin-[a-z]+)"\.([a-z_]+)` \|/gm)];
    expect(pluginKeys.length).to.be.greaterThan(3);
    const unread = pluginKeys.filter(([, plugin, key]) => !sourcesOf(`plugins/${plugin}/src`).some((text) => new RegExp(`\\b${key}: z\\s*\\.`).test(text)));
    expect(unread.map(([row]) => row)).to.deep.equal([]);
  });
});

/** The headings of a Markdown file, without their #s. */
const headingsOf = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) => line.replace(/^#+\s*/, '').trim());

describe('the sources', () => {
  it('cite the docs, never the design notes users do not have', () => {
    const notes = new RegExp(`\\b${'SP'}EC\\b`);
    const files = ['packages', 'plugins', 'test', 'scripts'].flatMap((dir) => sourceFiles(path.join(repoRoot, dir)));
    expect(files.length).to.be.greaterThan(300);
    expect(files.filter((file) => notes.test(readFileSync(file, 'utf8'))).map((file) => path.relative(repoRoot, file))).to.deep.equal([]);
  });
});

describe('the docs', () => {
  it('are cited by their headings: every `docs/x.md, "Heading"` in the sources and docs names a heading of x.md', () => {
    const docs = new Map(markdownFiles(path.join(repoRoot, 'docs')).map((file) => [path.basename(file), headingsOf(file)]));
    for (const file of ['README.md', 'DEVELOPERS.md']) docs.set(file, headingsOf(path.join(repoRoot, file)));
    const tracked = execFileSync('git', ['ls-files'], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      .split('\n')
      .filter((file) => /\.(ts|js|cjs|md)$/.test(file));
    const cited: string[] = [];
    const broken: string[] = [];
    for (const file of tracked) {
      // A citation may run over a comment's line break.
      const text = readFileSync(path.join(repoRoot, file), 'utf8').replace(/\s*\n\s*(\*|\/\/|#)?\s*/g, ' ');
      for (const [, doc, heading] of text.matchAll(/([A-Za-z-]+\.md)\)?,? \(?"([^"]{2,80})"/g)) {
        const headings = docs.get(doc!);
        if (!headings) continue;
        cited.push(`${doc}, "${heading}"`);
        if (!headings.some((each) => each.startsWith(heading!))) broken.push(`${file}: ${doc}, "${heading}"`);
      }
    }
    expect(cited.length).to.be.greaterThan(30);
    expect(cited).to.include('performance.md, "Rate limits"');
    expect(broken).to.deep.equal([]);
  });

  it('cite no file outside the repository (the design notes are not shipped)', () => {
    for (const file of markdownFiles()) {
      expect(readFileSync(file, 'utf8'), path.relative(repoRoot, file)).to.not.match(/\bSPEC(\.md)?\b/);
    }
  });
});
