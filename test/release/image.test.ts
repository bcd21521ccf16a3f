import { execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { loginToken } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { migrateWithUser, runInstalled } from './installed-gateway.js';
import { imageArchive, releaseArtifacts } from './release-build.js';

const run = promisify(execFile);

interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  Cmd: string[];
  WorkingDir: string;
  ExposedPorts: Record<string, unknown>;
  Volumes: Record<string, unknown>;
  Labels: Record<string, string>;
}

interface Unpacked {
  rootfs: string;
  config: ImageConfig;
  /** The layers' bytes as stored (gzip-compressed tar). */
  compressedBytes: number;
}

const blob = (dir: string, digest: string) => path.join(dir, 'blobs', ...digest.split(':'));

/** The image's files laid out as a container runtime would (its layers in order) and its configuration. */
async function unpack(archive: string): Promise<Unpacked> {
  const dir = tempDir('tkgate-oci-');
  await run('tar', ['-xf', archive, '-C', dir]);
  const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string }> };
  const manifest = JSON.parse(readFileSync(blob(dir, index.manifests[0]!.digest), 'utf8')) as {
    config: { digest: string };
    layers: Array<{ digest: string; mediaType: string }>;
  };
  const rootfs = tempDir('tkgate-image-root-');
  // The container's `/`: its user must be able to enter it (a temporary directory is its creator's alone).
  chmodSync(rootfs, 0o755);
  let compressedBytes = 0;
  for (const layer of manifest.layers) {
    expect(layer.mediaType).to.equal('application/vnd.oci.image.layer.v1.tar+gzip');
    compressedBytes += statSync(blob(dir, layer.digest)).size;
    await run('tar', ['-xzf', blob(dir, layer.digest), '-C', rootfs, '--numeric-owner']);
  }
  const { config } = JSON.parse(readFileSync(blob(dir, manifest.config.digest), 'utf8')) as { config: ImageConfig };
  return { rootfs, config, compressedBytes };
}

/** Whether this machine can build and enter the image: podman (or buildah) and root for chroot. */
function missingTools(): string | undefined {
  if (process.getuid?.() !== 0) return 'chroot needs root';
  const found = ['podman', 'buildah'].some((tool) => spawnSync(tool, ['--version']).status === 0);
  return found ? undefined : 'neither podman nor buildah is installed (apt-get install podman buildah)';
}

describe('npm run image: the OCI image, entered with chroot', function () {
  this.timeout(900_000);
  let image: Unpacked;
  let version: string;

  before(async function () {
    const missing = missingTools();
    if (missing) {
      if (process.env.CI === 'true') throw new Error(`the image test runs in CI: ${missing}`);
      process.stderr.write(`\n  !! image test skipped: ${missing}\n\n`);
      this.skip();
    }
    version = (await releaseArtifacts()).version;
    image = await unpack(await imageArchive());
  });

  /** A command run the way the image runs: its entrypoint, as its user, with its environment only. */
  const inImage = (args: string[], extraEnv: Record<string, string> = {}) => {
    const env = Object.fromEntries(image.config.Env.map((entry) => entry.split(/=(.*)/s).slice(0, 2) as [string, string]));
    return {
      command: 'chroot',
      args: [`--userspec=${image.config.User}`, image.rootfs, ...image.config.Entrypoint, ...args],
      env: { ...env, ...extraEnv },
    };
  };

  it('is tagged with the version, carries the OCI labels, runs as a non-root user, and stays under 80 MB compressed', () => {
    expect(image.config.Labels['org.opencontainers.image.version']).to.equal(version);
    expect(image.config.Labels['org.opencontainers.image.title']).to.equal('tkgate');
    for (const label of ['created', 'revision', 'licenses', 'description']) expect(image.config.Labels).to.have.property(`org.opencontainers.image.${label}`);
    const [uid] = image.config.User.split(':');
    expect(Number(uid)).to.be.greaterThan(0);
    expect(readFileSync(path.join(image.rootfs, 'etc/passwd'), 'utf8')).to.match(new RegExp(`^tkgate:x:${uid}:`, 'm'));
    expect(statSync(path.join(image.rootfs, 'var/lib/tkgate')).uid).to.equal(Number(uid));
    expect(statSync(path.join(image.rootfs, 'tmp')).mode & 0o1777).to.equal(0o1777);
    expect(image.config.Volumes).to.have.property('/var/lib/tkgate');
    expect(image.config.ExposedPorts).to.have.property('8080/tcp');
    expect(image.config.Cmd).to.deep.equal(['start']);
    expect(image.config.Env).to.include('TKGATE_CONFIG=/etc/tkgate/config.yaml');
    const config = readFileSync(path.join(image.rootfs, 'etc/tkgate/config.yaml'), 'utf8');
    expect(config)
      .to.match(/host: 0\.0\.0\.0\n\s+port: 8080/)
      .and.match(/dir: \/etc\/tkgate\/toolkits/)
      .and.match(/filename: \/var\/lib\/tkgate\//);
    expect(image.compressedBytes).to.be.at.most(80 * 1024 * 1024);
  });

  it('answers its version, migrates SQLite in /var/lib/tkgate, starts, is ready, logs a user in and exits 0 on SIGTERM', async () => {
    const cli = (args: string[], stdin = '') => {
      const { command, args: full, env } = inImage(args);
      return runInstalled(command, full, env, stdin);
    };
    const shown = await cli(['--version']);
    expect(shown.stdout, shown.stderr).to.equal(`tkgate ${version}\n`);
    await migrateWithUser(cli);
    expect(statSync(path.join(image.rootfs, 'var/lib/tkgate/tkgate.sqlite')).uid).to.equal(Number(image.config.User.split(':')[0]));

    // The image listens on 0.0.0.0:8080; here, loopback and a free port (chroot shares the host's network).
    const { command, args, env } = inImage(['start'], {
      TKGATE_HOST: '127.0.0.1',
      TKGATE_PORT: '0',
      TKGATE_METRICS_HOST: '127.0.0.1',
      TKGATE_METRICS_PORT: '0',
    });
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      let base = '';
      for await (const line of createInterface({ input: child.stdout })) {
        const record = JSON.parse(line) as Record<string, unknown>;
        if (record.msg === 'listening') {
          base = String(record.url);
          child.stdout.resume();
          break;
        }
      }
      expect(base, `tkgate exited before listening: ${stderr}`).to.match(/^http:\/\/127\.0\.0\.1:\d+\//);
      const ready = await fetch(new URL('/readyz', base));
      expect(ready.status).to.equal(200);
      expect(await ready.json()).to.deep.include({ status: 'ready' });
      expect(await loginToken(base, 'ops', 'ops-password-1'))
        .to.be.a('string')
        .and.not.equal('');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).to.equal(0);
  });
});
