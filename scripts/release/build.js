// `npm run release`: from a built checkout, a self-contained linux-x64 release in build/release/:
// tkgate-<version>-linux-x64.tar.gz (unpack anywhere, run bin/tkgate) and tkgate_<version>_amd64.deb.
// Neither needs node, npm, a compiler or a network where it is installed. `--no-deb` skips the .deb.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDeb } from './deb.js';
import { runtimeDepends } from './glibc.js';
import { stageRelease } from './stage.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`a release is built on linux-x64 (this is ${process.platform}-${process.arch})`);
const { version } = JSON.parse(readFileSync(path.join(root, 'packages/cli/package.json'), 'utf8'));
const outDir = path.join(root, 'build/release');
const name = `tkgate-${version}-linux-x64`;
const stage = path.join(outDir, 'stage', name);

mkdirSync(outDir, { recursive: true });
const { dependencies, node } = stageRelease(root, stage);
const tarball = path.join(outDir, `${name}.tar.gz`);
rmSync(tarball, { force: true });
execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '-C', path.dirname(stage), '-czf', tarball, name]);
process.stdout.write(`${tarball} (node ${node}, ${dependencies} dependencies; needs glibc ${runtimeDepends(stage).glibc} or newer)\n`);
if (!process.argv.includes('--no-deb')) {
  const deb = buildDeb({ root, stage, work: path.join(outDir, 'deb'), outDir, version });
  process.stdout.write(`${deb}\n`);
}
