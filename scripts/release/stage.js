// Assembles the release tree from a built checkout, without npm install and without network:
// the @tkgate packages as `npm pack` would ship them, their production dependencies copied from the
// checkout's node_modules (where `npm ci` already compiled better-sqlite3 and the exec helper), the Node
// runtime that runs this script and bin/tkgate, a sh launcher for that runtime.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { placeCliSchema } from './cli-schema.js';

/** The packages a gateway runs on; the template and the Redis example are not part of a release. */
export const RELEASE_WORKSPACES = [
  'packages/core',
  'packages/console',
  'packages/cli',
  'plugins/plugin-internal',
  'plugins/plugin-http',
  'plugins/plugin-exec',
  'plugins/plugin-ssh',
];

/** Build outputs a running gateway never reads: sources and objects of native modules, type declarations. */
const PRUNED = {
  'better-sqlite3': (rel) =>
    rel === 'deps' || rel === 'src' || (rel.startsWith('build/') && rel !== 'build/Release' && rel !== 'build/Release/better_sqlite3.node'),
};

const npm = (root, args) =>
  execFileSync('npm', [...args, '--loglevel=error'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });

const manifestOf = (dir) => JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));

/** Copies each workspace's packed files (its "files", README, LICENSE, package.json) into node_modules. */
function copyWorkspaces(root, modules) {
  // The console's files are built by npm ci (the root prepare script); a checkout that skipped it builds them here.
  if (!existsSync(path.join(root, 'packages/console/dist/public/index.html')))
    execFileSync(process.execPath, [path.join(root, 'packages/console/build.js')], { stdio: 'inherit' });
  // Packed with --ignore-scripts: the CLI's prepack (its copy of the toolkit schema) is done here.
  placeCliSchema();
  const packs = JSON.parse(npm(root, ['pack', '--dry-run', '--json', '--ignore-scripts', ...RELEASE_WORKSPACES.flatMap((w) => ['-w', w])]));
  for (const workspace of RELEASE_WORKSPACES) {
    const { name, files } = packs.find((pack) => pack.name === manifestOf(path.join(root, workspace)).name);
    const dest = path.join(modules, name);
    for (const { path: file } of files) {
      if (file.endsWith('.d.ts') || file.endsWith('.map')) continue;
      mkdirSync(path.dirname(path.join(dest, file)), { recursive: true });
      copyFileSync(path.join(root, workspace, file), path.join(dest, file));
    }
  }
  // The exec plugin's native helper and not-dumpable module are built by its install script, so they are not among the packed files.
  const built = ['native/build/tkgate-spawn-helper', 'native/build/tkgate-not-dumpable.node'];
  if (!built.every((file) => existsSync(path.join(root, 'plugins/plugin-exec', file))))
    execFileSync(process.execPath, [path.join(root, 'plugins/plugin-exec/native/build.js')], { stdio: 'inherit' });
  mkdirSync(path.join(modules, '@tkgate/plugin-exec/native/build'), { recursive: true });
  for (const file of built) {
    if (!existsSync(path.join(root, 'plugins/plugin-exec', file))) throw new Error(`plugins/plugin-exec/${file} could not be built (is there a C compiler?)`);
    copyFileSync(path.join(root, 'plugins/plugin-exec', file), path.join(modules, '@tkgate/plugin-exec', file));
  }
}

/**
 * Copies every production dependency of the release workspaces, each at the place npm installed it
 * (hoisted, or nested under a workspace or another package), without its own nested node_modules:
 * those that are production dependencies are in npm's list themselves.
 */
function copyDependencies(root, modules) {
  const workspaceDirs = new Map(RELEASE_WORKSPACES.map((w) => [path.join(root, w), manifestOf(path.join(root, w)).name]));
  const listed = npm(root, ['ls', '--omit=dev', '--all', '--parseable', ...RELEASE_WORKSPACES.flatMap((w) => ['-w', w])]).split('\n');
  const dirs = [...new Set(listed.filter((line) => line.includes(`${path.sep}node_modules${path.sep}`)))];
  for (const dir of dirs) {
    const rel = path.relative(root, dir);
    if (rel.startsWith('node_modules/@tkgate/')) continue;
    // packages/core/node_modules/x lands in node_modules/@tkgate/core/node_modules/x.
    const owner = [...workspaceDirs.keys()].find((w) => dir.startsWith(`${w}${path.sep}`));
    const dest = owner
      ? path.join(modules, workspaceDirs.get(owner), path.relative(owner, dir))
      : path.join(modules, path.relative(path.join(root, 'node_modules'), dir));
    const name = manifestOf(dir).name;
    const pruned = PRUNED[name] ?? (() => false);
    cpSync(dir, dest, {
      recursive: true,
      dereference: true,
      filter: (source) => {
        const inner = path.relative(dir, source);
        return inner === '' || (!inner.split(path.sep).includes('node_modules') && !pruned(inner));
      },
    });
  }
  return dirs.length;
}

/** Writes the release tree into `dest` (emptied first) and returns what it holds. */
export function stageRelease(root, dest) {
  rmSync(dest, { recursive: true, force: true });
  const modules = path.join(dest, 'node_modules');
  mkdirSync(modules, { recursive: true });
  copyWorkspaces(root, modules);
  const dependencies = copyDependencies(root, modules);
  if (!existsSync(path.join(modules, 'better-sqlite3/build/Release/better_sqlite3.node')))
    throw new Error('better-sqlite3 has no compiled binding in the checkout: run npm ci');

  // Debian's own nodejs package is a small binary over a shared libnode: copied alone it would not run.
  if (readFileSync(process.execPath).includes('libnode.so')) {
    throw new Error(`${process.execPath} loads a shared libnode: build the release with a self-contained Node (nodejs.org's or NodeSource's)`);
  }
  mkdirSync(path.join(dest, 'node/bin'), { recursive: true });
  copyFileSync(process.execPath, path.join(dest, 'node/bin/node'));
  chmodSync(path.join(dest, 'node/bin/node'), 0o755);
  const nodeLicense = ['../share/doc/node/LICENSE', '../share/doc/nodejs/LICENSE']
    .map((rel) => path.resolve(path.dirname(process.execPath), rel))
    .find(existsSync);
  if (nodeLicense) copyFileSync(nodeLicense, path.join(dest, 'node/LICENSE'));

  mkdirSync(path.join(dest, 'bin'));
  copyFileSync(new URL('./files/tkgate.sh', import.meta.url), path.join(dest, 'bin/tkgate'));
  chmodSync(path.join(dest, 'bin/tkgate'), 0o755);
  mkdirSync(path.join(dest, 'share'));
  copyFileSync(new URL('./files/config.yaml', import.meta.url), path.join(dest, 'share/config.example.yaml'));
  copyFileSync(path.join(root, 'docs/deploy/tkgate.service'), path.join(dest, 'share/tkgate.service'));
  for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md'])
    if (existsSync(path.join(root, file))) copyFileSync(path.join(root, file), path.join(dest, file));
  writeFileSync(path.join(dest, 'VERSION'), `${manifestOf(path.join(root, 'packages/cli')).version}\n`);
  return { dependencies, node: process.version };
}
