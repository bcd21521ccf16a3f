import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../support/paths.js';

export interface ReleaseArtifacts {
  version: string;
  tarball: string;
  deb: string;
}

/** The workspaces a release ships (scripts/release/stage.js). */
export const RELEASE_PACKAGES = [
  'packages/core',
  'packages/console',
  'packages/cli',
  'plugins/plugin-internal',
  'plugins/plugin-http',
  'plugins/plugin-exec',
  'plugins/plugin-ssh',
];

let built: Promise<ReleaseArtifacts> | undefined;

/** `node scripts/release/build.js` once per test run (the suite has built the checkout already). */
export function releaseArtifacts(): Promise<ReleaseArtifacts> {
  built ??= (async () => {
    await promisify(execFile)(process.execPath, [path.join(repoRoot, 'scripts/release/build.js')], { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'packages/cli/package.json'), 'utf8')) as { version: string };
    const out = path.join(repoRoot, 'build/release');
    return { version, tarball: path.join(out, `tkgate-${version}-linux-x64.tar.gz`), deb: path.join(out, `tkgate_${version}_amd64.deb`) };
  })();
  return built;
}

let imageBuilt: Promise<string> | undefined;

/**
 * `npm run image`'s script once per test run, on the release tarball releaseArtifacts() built (it builds the
 * tarball only when missing): resolves to the OCI archive build/release/tkgate-<version>-oci.tar.
 */
export function imageArchive(): Promise<string> {
  imageBuilt ??= (async () => {
    const { version } = await releaseArtifacts();
    await promisify(execFile)(process.execPath, [path.join(repoRoot, 'scripts/release/image.js')], { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
    return path.join(repoRoot, 'build/release', `tkgate-${version}-oci.tar`);
  })();
  return imageBuilt;
}
