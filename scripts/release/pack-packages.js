// `npm run pack:packages`: the @tkgate packages (core, cli and the three plugins) as npm tarballs in
// build/packages/, what `npm publish` would upload. Until they are on npm, a plugin author installs these
// (docs/plugins.md). `--out DIR` writes elsewhere; further arguments name more workspaces to pack
// (test/plugins/packages.test.ts adds examples/plugin-template). Prints each tarball's path.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { placeCliSchema } from './cli-schema.js';
import { RELEASE_WORKSPACES } from './stage.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
const out = path.resolve(values.out ?? path.join(root, 'build/packages'));
const workspaces = [...RELEASE_WORKSPACES, ...positionals];

mkdirSync(out, { recursive: true });
for (const old of readdirSync(out).filter((name) => name.endsWith('.tgz'))) rmSync(path.join(out, old));
// --ignore-scripts: the plugin-exec install script compiles at install time, not when packing; the
// template's prepack (tsc -b) is done by the build that precedes this, the CLI's (its schema copy) here.
placeCliSchema();
execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', out, '--loglevel=error', ...workspaces.flatMap((w) => ['-w', w])], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, npm_config_update_notifier: 'false' },
});
for (const name of readdirSync(out)
  .filter((entry) => entry.endsWith('.tgz'))
  .sort())
  process.stdout.write(`${path.join(out, name)}\n`);
