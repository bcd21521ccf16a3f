import { execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { call, loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { writeToolkit } from '../support/toolkit-files.js';
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

/**
 * What a container runtime gives every container and the unpacked image lacks: /dev/null, which a command's stdin
 * is (the spawn helpers open it). The image's own files stay as built: no shell, no tools.
 */
async function addRuntimeDevices(rootfs: string): Promise<void> {
  mkdirSync(path.join(rootfs, 'dev'), { recursive: true });
  await run('mknod', ['-m', '666', path.join(rootfs, 'dev/null'), 'c', '1', '3']);
}

/** The image's Node runtime, the only program it has for a command: it prints what the context says (its last argument). */
const NODE = '/opt/tkgate/node/bin/node';
const printContext = (script: string) => [NODE, '-e', `const context = JSON.parse(process.argv[1]); ${script}`];
const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    {
      path: 'whoami',
      method: 'GET',
      type: 'exec',
      command: printContext('process.stdout.write(JSON.stringify({ user: context.username, uid: process.getuid() }))'),
    },
    {
      path: 'deploy',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: printContext("console.log('deploying as ' + context.username); console.error('to stderr'); console.log('done')"),
    },
  ],
};
/** For `config check`: commands the image cannot run (no shell, no uptime). */
const missing = {
  name: 'missing',
  type: 'app',
  endpoints: [
    { path: 'shell', method: 'GET', type: 'exec', command: 'echo hi' },
    { path: 'uptime', method: 'GET', type: 'exec', command: ['uptime'], context: 'none' },
  ],
};

/** This machine's chroot, by path: the image's environment, which the command is given, has the image's PATH. */
const CHROOT = ['/usr/sbin/chroot', '/usr/bin/chroot'].find(existsSync) ?? 'chroot';

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
    await addRuntimeDevices(image.rootfs);
  });

  /** A command run the way the image runs: its entrypoint, as its user, with its environment only (its PATH is the image's). */
  const inImage = (args: string[], extraEnv: Record<string, string> = {}) => {
    const env = Object.fromEntries(image.config.Env.map((entry) => entry.split(/=(.*)/s).slice(0, 2) as [string, string]));
    return {
      command: CHROOT,
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
    // tini is PID 1 (it reaps what commands leave); there is no shell.
    expect(image.config.Entrypoint.slice(0, 3)).to.deep.equal(['/usr/bin/tini', '-s', '--']);
    expect(existsSync(path.join(image.rootfs, 'bin/sh'))).to.equal(false);
    expect(image.config.Env).to.include('TKGATE_CONFIG=/etc/tkgate/config.yaml');
    const config = readFileSync(path.join(image.rootfs, 'etc/tkgate/config.yaml'), 'utf8');
    expect(config)
      .to.match(/host: 0\.0\.0\.0\n\s+port: 8080/)
      .and.match(/dir: \/etc\/tkgate\/toolkits/)
      .and.match(/filename: \/var\/lib\/tkgate\//);
    expect(image.compressedBytes).to.be.at.most(80 * 1024 * 1024);
  });

  it('answers its version, migrates SQLite in /var/lib/tkgate, warns of commands it lacks, starts, is ready, runs an exec call and a run, and exits 0 on SIGTERM', async () => {
    const cli = (args: string[], stdin = '') => {
      const { command, args: full, env } = inImage(args);
      return runInstalled(command, full, env, stdin);
    };
    const shown = await cli(['--version']);
    expect(shown.stdout, shown.stderr).to.equal(`tkgate ${version}\n`);
    await migrateWithUser(cli);
    expect(statSync(path.join(image.rootfs, 'var/lib/tkgate/tkgate.sqlite')).uid).to.equal(Number(image.config.User.split(':')[0]));

    // config check in the image: a string command has no /bin/sh there, and a bare name no program on PATH.
    mkdirSync(path.join(image.rootfs, 'etc/tkgate/check'));
    writeToolkit(path.join(image.rootfs, 'etc/tkgate/check'), 'missing.yaml', missing);
    const checked = await cli(['config', 'check', '/etc/tkgate/check']);
    expect(checked.code, checked.stdout + checked.stderr).to.equal(0);
    expect(checked.stdout).to.include('missing.yaml: endpoint.shell.command: warning: a string command runs under /bin/sh, which this machine does not have');
    expect(checked.stdout).to.include('missing.yaml: endpoint.uptime.command.0: warning: uptime is not found on PATH (/usr/local/bin:/usr/bin:/bin)');
    writeToolkit(path.join(image.rootfs, 'etc/tkgate/toolkits'), 'ops.yaml', ops);

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
      const token = await loginToken(base, 'ops', 'ops-password-1');
      const c = toolkitClient(base, token);
      // A sync call and a run, through the native spawn helper and the gateway, as the image's user, with no shell.
      const answer = await c.get('ops', 'whoami');
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body.data).to.deep.equal({ user: 'ops', uid: Number(image.config.User.split(':')[0]) });
      const accepted = await c.post('ops', 'deploy', {});
      expect(accepted.status, JSON.stringify(accepted.body)).to.equal(202);
      const id = accepted.body.data.run_id as string;
      const run = await eventually('the run ends', async () => {
        const reply = await call('GET', `${base}/runs/${id}`, { token });
        return ['queued', 'running'].includes(reply.body.data.status) ? undefined : reply.body.data;
      });
      expect(run).to.deep.include({ status: 'succeeded', exit_code: 0 });
      const output = await fetch(`${base}/runs/${id}/output`, { headers: { authorization: `Bearer ${token}` } });
      // stdout and stderr are two pipes: their lines interleave as they were read.
      expect((await output.text()).split('\n').sort()).to.deep.equal(['', 'deploying as ops', 'done', 'to stderr']);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).to.equal(0);
  });
});
