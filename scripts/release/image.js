// `npm run image`: tkgate's OCI image from the release tarball (build/release/tkgate-<version>-linux-x64.tar.gz,
// built first when missing), with podman (Debian's package) and no network: the Containerfile at the root starts
// FROM scratch, and this script makes its build context, a root file system holding the unpacked release in
// /opt/tkgate, the shared libraries its ELF files link to (found with ldd, copied from this machine, as the
// release's own Node runtime was), /etc/passwd and /etc/group with the non-root user tkgate (10001), /tmp,
// Debian's tini as PID 1 (it reaps what commands of exec endpoints leave) and the configuration in /etc/tkgate.
// Tags tkgate:<version> and writes build/release/tkgate-<version>-oci.tar. Podman's storage is kept under
// build/release/image/podman (vfs driver: works without overlay or cgroups), its run root in a short directory
// of /tmp (podman refuses a long one).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A failed step is one line naming it (the tool's own output came before it), never a stack trace. */
class BuildFailure extends Error {}
process.on('uncaughtException', (err) => {
  process.stderr.write(`npm run image: ${err instanceof BuildFailure ? err.message : `failed: ${err.message}`}\n`);
  process.exit(1);
});

const root = fileURLToPath(new URL('../..', import.meta.url));
const { version } = JSON.parse(readFileSync(path.join(root, 'packages/cli/package.json'), 'utf8'));
const outDir = path.join(root, 'build/release');
const name = `tkgate-${version}-linux-x64`;
const tarball = path.join(outDir, `${name}.tar.gz`);
const work = path.join(outDir, 'image');
const context = path.join(work, 'context');
const rootfs = path.join(context, 'rootfs');
const archive = path.join(outDir, `tkgate-${version}-oci.tar`);
const tag = `tkgate:${version}`;
const UID = 10001;

/** Runs a tool; `what` names the step in the failure's line (default: the command's name). */
const run = (command, args, { what = path.basename(command), ...options } = {}) => {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
  } catch (err) {
    if (err.code === 'ENOENT') throw new BuildFailure(`${what}: ${command} is not installed`);
    throw new BuildFailure(`${what} ${err.status != null ? `exited ${err.status}` : `was killed (${err.signal})`}; its output is above`);
  }
};
/** Tini, the init the image runs as PID 1: Debian's static build, copied as the shared libraries are. */
const TINI = '/usr/bin/tini-static';

if (!existsSync(tarball) || process.argv.includes('--rebuild'))
  run(process.execPath, [path.join(root, 'scripts/release/build.js'), '--no-deb'], { stdio: 'inherit', what: 'the release build (scripts/release/build.js)' });
const tool = ['podman', 'buildah'].find((candidate) => {
  try {
    run(candidate, ['--version']);
    return true;
  } catch {
    return false;
  }
});
if (!tool) throw new BuildFailure('needs podman or buildah (Debian: apt-get install podman buildah)');
if (!existsSync(TINI)) throw new BuildFailure(`needs ${TINI}, the init the image runs as PID 1 (Debian: apt-get install tini)`);

rmSync(context, { recursive: true, force: true });
for (const dir of ['opt', 'etc/tkgate/toolkits', 'tmp', 'usr/bin', 'usr/local/bin', 'usr/share/doc/tini', 'var/lib'])
  mkdirSync(path.join(rootfs, dir), { recursive: true });
mkdirSync(path.join(context, 'data'), { recursive: true });
chmodSync(path.join(rootfs, 'tmp'), 0o1777);
run('tar', ['-xzf', tarball, '-C', path.join(rootfs, 'opt')]);
run('mv', [path.join(rootfs, 'opt', name), path.join(rootfs, 'opt/tkgate')]);
copyFileSync(TINI, path.join(rootfs, 'usr/bin/tini'));
chmodSync(path.join(rootfs, 'usr/bin/tini'), 0o755);
copyFileSync('/usr/share/doc/tini/copyright', path.join(rootfs, 'usr/share/doc/tini/copyright'));

/** ELF files of the release: the Node runtime, native modules, the exec spawn helper. */
function elfFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name))
    .filter((file) => statSync(file).size > 64 && readFileSync(file).subarray(0, 4).toString('latin1') === '\x7fELF');
}

/** Each shared library (and the dynamic loader) an ELF file loads, as ldd resolves them here. */
function librariesOf(file) {
  let output = '';
  try {
    output = run('ldd', [file]);
  } catch {
    return []; // not dynamic (a static helper), nothing to copy
  }
  return [...output.matchAll(/(?:=>\s*)?(\/[^\s]+)\s+\(0x/g)].map((match) => match[1]);
}

// Each library at the path the loader looks for it, its symlink chain resolved to the file.
const libraries = new Set(elfFiles(path.join(rootfs, 'opt/tkgate')).flatMap(librariesOf));
for (const library of libraries) {
  const target = path.join(rootfs, library);
  mkdirSync(path.dirname(target), { recursive: true });
  copyFileSync(realpathSync(library), target);
  chmodSync(target, 0o755);
}
// Debian's loader is /lib64/ld-linux-x86-64.so.2; on a merged /usr it is reached through /lib64 as well.
writeFileSync(path.join(rootfs, 'etc/passwd'), `root:x:0:0:root:/root:/sbin/nologin\ntkgate:x:${UID}:${UID}:tkgate:/var/lib/tkgate:/sbin/nologin\n`);
writeFileSync(path.join(rootfs, 'etc/group'), `root:x:0:\ntkgate:x:${UID}:\n`);
// Host names (a database Service's name) through /etc/hosts and DNS; glibc has both built in since 2.34.
writeFileSync(path.join(rootfs, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
copyFileSync(path.join(root, 'scripts/release/files/image/config.yaml'), path.join(rootfs, 'etc/tkgate/config.yaml'));
run('ln', ['-s', '/opt/tkgate/bin/tkgate', path.join(rootfs, 'usr/local/bin/tkgate')]);
copyFileSync(path.join(root, 'Containerfile'), path.join(context, 'Containerfile'));

// Podman keeps sockets and locks in its run root, whose path it limits (50 bytes), and records it and the
// storage's own path with the storage, refusing others later: the run root is a short directory in /tmp named
// after the storage directory (its device and inode), and a storage left at another path (the checkout was
// moved) is dropped, as is that of builds that kept their run root in the checkout (image/storage, image/run).
const storageDir = path.join(work, 'podman');
const storedAt = path.join(storageDir, 'tkgate-storage-path');
if (existsSync(storedAt) && readFileSync(storedAt, 'utf8') !== storageDir) rmSync(storageDir, { recursive: true, force: true });
for (const old of ['storage', 'run']) rmSync(path.join(work, old), { recursive: true, force: true });
mkdirSync(storageDir, { recursive: true });
writeFileSync(storedAt, storageDir);
const { dev, ino } = statSync(storageDir);
const runRoot = path.join('/tmp', `tkgate-podman-${dev.toString(36)}-${ino.toString(36)}`);
const storage = ['--root', storageDir, '--runroot', runRoot, '--storage-driver', 'vfs'];
const revision = (() => {
  try {
    return run('git', ['-C', root, 'rev-parse', 'HEAD']).trim();
  } catch {
    return 'unknown';
  }
})();
const buildArgs = ['--build-arg', `VERSION=${version}`, '--build-arg', `REVISION=${revision}`, '--build-arg', `CREATED=${new Date().toISOString()}`];
// No RUN step: nothing is executed in a container, so no cgroups or network are needed.
const common = ['--pull=never', '--isolation', 'chroot', '-f', path.join(context, 'Containerfile'), ...buildArgs];
run(tool, [...storage, 'build', ...common, '--format', 'oci', '-t', tag, context], { stdio: 'inherit', what: `${tool} build` });
rmSync(archive, { force: true });
run(tool, [...storage, ...(tool === 'podman' ? ['save', '--format', 'oci-archive', '-o', archive, tag] : ['push', tag, `oci-archive:${archive}:${tag}`])], {
  what: `${tool} ${tool === 'podman' ? 'save' : 'push'}`,
});
// A rebuild leaves the previous image's layers untagged: only the tagged one is kept (vfs stores layers whole).
run(tool, [...storage, ...(tool === 'podman' ? ['image', 'prune', '--force'] : ['rmi', '--prune'])], { what: `${tool} prune` });
process.stdout.write(`${archive} (${tag})\n`);
