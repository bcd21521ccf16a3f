import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadServerConfig } from '@tkgate/core';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import YAML from 'yaml';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { eventually } from '../support/eventually.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, writeToolkit } from '../support/toolkit-files.js';

const base = path.join(repoRoot, 'deploy/kubernetes');

/** The API objects a kind is validated as: kubernetes-models' classes carry the Kubernetes OpenAPI schemas. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'v1 Service': Service,
  'v1 ConfigMap': ConfigMap,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
};

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; [key: string]: unknown };

const kustomization = YAML.parse(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
const manifests: Manifest[] = kustomization.resources.flatMap((file) =>
  YAML.parseAllDocuments(readFileSync(path.join(base, file), 'utf8')).map((doc) => doc.toJS() as Manifest),
);
const validate = (manifest: Manifest) => {
  const Model = MODELS[`${manifest.apiVersion} ${manifest.kind}`];
  if (!Model) throw new Error(`no schema for ${manifest.apiVersion} ${manifest.kind}`);
  new Model(manifest as never).validate();
};
const find = (kind: string, name: string) => manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name)!;

describe('deploy/kubernetes: the kustomize base', () => {
  it('lists every manifest of the directory, and each validates against the Kubernetes API schemas', () => {
    const files = readdirSync(base).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).to.deep.equal(files.sort());
    expect(manifests.map((manifest) => manifest.kind).sort()).to.deep.equal(['ConfigMap', 'ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service']);
    for (const manifest of manifests) expect(() => validate(manifest), `${manifest.kind} ${manifest.metadata.name}`).to.not.throw();
  });

  it('the schemas are really checked: a mistyped field is refused', () => {
    const deployment = find('Deployment', 'tkgate');
    expect(() => validate({ ...deployment, spec: { ...(deployment.spec as object), replicas: 'three' } })).to.throw(/replicas/);
    const service = find('Service', 'tkgate');
    expect(() => validate({ ...service, spec: { ...(service.spec as object), ports: [{ port: 'http' }] } })).to.throw();
  });

  it('a Deployment of several non-root replicas with a read-only root, probes, a preStop drain, and the database URL from a Secret', () => {
    const spec = find('Deployment', 'tkgate').spec as any;
    expect(spec.replicas).to.be.greaterThan(1);
    const pod = spec.template.spec;
    const [container] = pod.containers;
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.securityContext.runAsUser).to.be.greaterThan(0);
    expect(container.securityContext.readOnlyRootFilesystem).to.equal(true);
    expect(container.readinessProbe.httpGet.path).to.equal('/readyz');
    expect(container.livenessProbe.httpGet.path).to.equal('/healthz');
    expect(container.lifecycle.preStop).to.be.an('object');
    expect(container.env.find((entry: { name: string }) => entry.name === 'TKGATE_DB_URL').valueFrom.secretKeyRef.name).to.be.a('string');
    const mounts = Object.fromEntries(container.volumeMounts.map((mount: { mountPath: string }) => [mount.mountPath, mount]));
    expect(mounts).to.have.keys('/etc/tkgate/config.yaml', '/etc/tkgate/toolkits', '/var/lib/tkgate', '/tmp');
    // Without subPath: only a mounted directory gets Kubernetes' in-place updates.
    expect(mounts['/etc/tkgate/toolkits'].subPath).to.equal(undefined);
    const volumes = Object.fromEntries(pod.volumes.map((volume: { name: string }) => [volume.name, volume]));
    expect(volumes[mounts['/etc/tkgate/toolkits'].name].configMap.name).to.equal('tkgate-toolkits');
    expect(volumes[mounts['/etc/tkgate/config.yaml'].name].configMap.name).to.equal('tkgate-config');
    const selector = find('PodDisruptionBudget', 'tkgate').spec as { selector: { matchLabels: Record<string, string> } };
    expect(spec.template.metadata.labels).to.deep.include(selector.selector.matchLabels);
    expect(spec.template.metadata.labels).to.deep.include((find('Service', 'tkgate').spec as { selector: Record<string, string> }).selector);
  });

  it("the ConfigMap's config.yaml is a configuration tkgate accepts, on PostgreSQL with the URL from the environment", () => {
    const dir = tempDir('tkgate-k8s-config-');
    const file = path.join(dir, 'config.yaml');
    const data = (find('ConfigMap', 'tkgate-config') as unknown as { data: Record<string, string> }).data;
    mkdirSync(path.join(dir, 'toolkits'));
    writeFileSync(file, data['config.yaml']!.replace('/etc/tkgate/toolkits', path.join(dir, 'toolkits')));
    const config = loadServerConfig({ file, cwd: dir, env: { TKGATE_DB_URL: 'postgres://tkgate:pw@db:5432/tkgate' } });
    expect(config.db.client).to.equal('postgres');
    expect(config.server.host).to.equal('0.0.0.0');
    expect(config.server.port).to.equal(8080);
  });

  it("the grace period covers a whole stop: the preStop pause, shutdown_delay, the runs' drain and kill, in-flight requests", () => {
    const dir = tempDir('tkgate-k8s-grace-');
    const file = path.join(dir, 'config.yaml');
    mkdirSync(path.join(dir, 'toolkits'));
    const data = (find('ConfigMap', 'tkgate-config') as unknown as { data: Record<string, string> }).data;
    writeFileSync(file, data['config.yaml']!.replace('/etc/tkgate/toolkits', path.join(dir, 'toolkits')));
    const config = loadServerConfig({ file, cwd: dir, env: { TKGATE_DB_URL: 'postgres://tkgate:pw@db:5432/tkgate' } });
    const pod = (find('Deployment', 'tkgate').spec as any).template.spec;
    const preStopMs = pod.containers[0].lifecycle.preStop.sleep.seconds * 1000;
    // A stop (packages/core/src/gateway.ts): shutdown_delay, then the runs' drain_timeout and cancel_grace, then up to
    // 10 s for in-flight requests. Cut short, the kubelet's SIGKILL ends the draining runs lost, not gateway_stopped.
    const stopMs = preStopMs + config.server.shutdown_delay_ms + config.runs.drain_timeout_ms + config.runs.cancel_grace_ms + 10_000;
    expect(pod.terminationGracePeriodSeconds * 1000).to.be.greaterThan(stopMs);
  });
});

/**
 * How the kubelet updates a mounted ConfigMap: the files are symlinks `name -> ..data/name`, `..data` is a
 * symlink to a timestamped directory, and an update writes a new timestamped directory, points a new
 * symlink at it and renames that over `..data` (atomic), then removes the old directory.
 */
class ConfigMapVolume {
  private generation = 0;
  constructor(readonly dir: string) {}

  private stamp(): string {
    return `..2026_11_27_00_00_0${++this.generation}.${String(this.generation).padStart(9, '0')}`;
  }

  /** The first version: the timestamped directory, `..data` and the file links. */
  create(files: Record<string, object>): void {
    const stamp = this.write(files);
    symlinkSync(stamp, path.join(this.dir, '..data'));
    for (const name of Object.keys(files)) symlinkSync(path.join('..data', name), path.join(this.dir, name));
  }

  /** An update: a new timestamped directory, then `..data` re-pointed by a rename, then the old one removed. */
  update(files: Record<string, object>): void {
    const old = readdirSync(this.dir).find((entry) => entry.startsWith('..2026'))!;
    const stamp = this.write(files);
    symlinkSync(stamp, path.join(this.dir, '..data_tmp'));
    renameSync(path.join(this.dir, '..data_tmp'), path.join(this.dir, '..data'));
    rmSync(path.join(this.dir, old), { recursive: true });
  }

  private write(files: Record<string, object>): string {
    const stamp = this.stamp();
    mkdirSync(path.join(this.dir, stamp));
    for (const [name, doc] of Object.entries(files)) writeToolkit(path.join(this.dir, stamp), name, doc as never);
    return stamp;
  }
}

for (const dialect of dialects.slice(0, 1)) {
  describe(`hot reload of a toolkits directory mounted from a ConfigMap (${dialect.name})`, () => {
    const volume = new ConfigMapVolume(tempDir('tkgate-configmap-'));
    const notes = (group: string) => ({ 'notes.yaml': { name: 'notes', type: 'app', default_group: group, endpoints: [echoEndpoint()] } });
    volume.create(notes('v1'));
    // rescan_interval 0: only the watcher's events can make the update live.
    const s = withGateway(dialect, [{ username: 'kim' }], { toolkits: { dir: volume.dir, watch: true, rescan_interval: 0 } }, { toolkitsDir: volume.dir });

    it('serves the new version after the kubelet re-points ..data, and the one after that', async () => {
      const client = toolkitClient(s.gateway.base, await s.login('kim'));
      const groupIs = (group: string) => async () => ((await client.get('notes', 'echo')).body.data?.toolkit_group === group ? true : undefined);
      await eventually('v1 served', groupIs('v1'));
      volume.update(notes('v2'));
      await eventually('v2 served after the ..data swap', groupIs('v2'), 10_000);
      volume.update(notes('v3'));
      await eventually('v3 served after the second swap', groupIs('v3'), 10_000);
    });
  });
}
