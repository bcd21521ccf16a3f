import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { GatewayError } from '@tkgate/core';
import { describeInventoryProblem, Inventory, nodeListing, parseHostKey, selectNodes, type FleetNode, type HostKey } from '@tkgate/plugin-ssh/engine';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/paths.js';
import { memoryLog } from './fleet-support.js';

const run = promisify(execFile);

async function hostKey(dir: string, name: string): Promise<string> {
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', path.join(dir, name)]);
  return (await run('ssh-keygen', ['-y', '-f', path.join(dir, name)])).stdout.trim();
}

const key = (text: string) => parseHostKey(text) as HostKey;

describe('fleet inventory', function () {
  this.timeout(60_000);
  let dir: string;
  let keyA: string;
  let keyB: string;
  const inventories: Inventory[] = [];
  const open = (options: Omit<ConstructorParameters<typeof Inventory>[0], 'log' | 'baseDir'> & { baseDir?: string }) => {
    const logged = memoryLog();
    const inventory = new Inventory({ baseDir: dir, settleMs: 50, ...options, log: logged.log });
    inventories.push(inventory);
    return { inventory, lines: logged.lines };
  };

  before(async () => {
    dir = tempDir('tkgate-inventory-');
    keyA = await hostKey(dir, 'a');
    keyB = await hostKey(dir, 'b');
  });
  after(async () => Promise.all(inventories.map((inventory) => inventory.close())));

  it('reads a YAML file: defaults, labels as text, the host key checked and fingerprinted', async () => {
    const file = path.join(dir, 'nodes.yaml');
    writeFileSync(
      file,
      `- { name: web-1, host: 10.0.0.1, user: deploy, labels: { role: web, tier: 1, canary: true }, host_key: "${keyA} a comment" }\n- name: db-1\n  host: db1.example\n  port: 2222\n  host_keys: ["${keyB}"]\n  jump: web-1\n`,
    );
    const { inventory } = open({ sources: [{ file: 'nodes.yaml' }] });
    const [report] = await inventory.load();
    expect(report).to.deep.include({ source: file, nodes: 2, problems: [] });
    const [web, db] = inventory.nodes.nodes;
    expect(web).to.deep.include({
      name: 'web-1',
      host: '10.0.0.1',
      port: 22,
      user: 'deploy',
      labels: { role: 'web', tier: '1', canary: 'true' },
      source: file,
    });
    expect(web!.hostKeys![0]!.fingerprint).to.equal((await run('ssh-keygen', ['-lf', path.join(dir, 'a.pub')])).stdout.split(' ')[1]);
    expect(db).to.deep.include({ name: 'db-1', port: 2222, jump: 'web-1' });
    expect(inventory.nodes.hostKeysOf(db!)).to.deep.equal([key(keyB)]);
  });

  it('refuses a broken version naming file:line:column, the key and the node; the last good one stays', async () => {
    const file = path.join(dir, 'refused.yaml');
    writeFileSync(file, '- { name: a, host: 10.0.0.1 }\n');
    const { inventory, lines } = open({ sources: [{ file }] });
    await inventory.load();
    const cases: Array<[string, RegExp]> = [
      ['- { name: a, host: 10.0.0.1 }\n- { name: a, host: 10.0.0.2 }\n', /^refused\.yaml:2:11: 1\.name \(node a\): a second node named a/],
      [
        '- { name: a, host: 10.0.0.1 }\n- name: b\n  host: "-oProxyCommand=x"\n',
        /^refused\.yaml:3:9: 1\.host \(node b\): must be a host name or an IP address/,
      ],
      ['- name: a\n  host: 10.0.0.1\n  hots: x\n', /^refused\.yaml:3:3: 0\.hots \(node a\): unknown key/],
      ['- { name: "a/b", host: 10.0.0.1 }\n', /^refused\.yaml:1:11: 0\.name \(node a\/b\): must be letters, digits and/],
      ['- { name: a, host: 10.0.0.1, host_key: "ssh-ed25519 AAAAnope" }\n', /^refused\.yaml:1:40: 0\.host_key \(node a\): the key/],
      ['- { name: a, host: 10.0.0.1, port: 70000 }\n', /^refused\.yaml:1:36: 0\.port \(node a\)/],
      ['- { name: a, host: 10.0.0.1, jump: nowhere }\n', /^refused\.yaml:1:36: 0\.jump \(node a\): names no node of the inventory/],
      ['- { name: a, host: 10.0.0.1, jump: b }\n- { name: b, host: 10.0.0.2, jump: a }\n', /^refused\.yaml:1:36: 0\.jump \(node a\): its jump hosts go round/],
      ['- { name: a, host: [10.0.0.1 }\n', /^refused\.yaml:1:\d+: \(file\): not valid YAML/],
      ['{ name: a }\n', /^refused\.yaml:1:1: \(file\): must be a list of nodes/],
    ];
    for (const [text, expected] of cases) {
      writeFileSync(file, text);
      const [report] = await inventory.load();
      expect(report!.problems.map((problem) => describeInventoryProblem({ ...problem, file: path.basename(problem.file) })).join('\n'), text).to.match(
        expected,
      );
      expect(
        inventory.nodes.nodes.map((node) => node.host),
        text,
      ).to.deep.equal(['10.0.0.1']);
    }
    expect(lines.filter((line) => line.msg === 'fleet inventory source refused; its last good version stays')).to.have.length(cases.length);
  });

  it('follows a file (an edit, a broken edit, a file renamed over it) and keeps the last good version', async () => {
    const file = path.join(dir, 'watched.yaml');
    writeFileSync(file, '- { name: w1, host: 10.0.1.1 }\n');
    const { inventory, lines } = open({ sources: [{ file }] });
    await inventory.load();
    await inventory.watch();
    const hosts = () => inventory.nodes.nodes.map((node) => node.host).join(',');
    writeFileSync(file, '- { name: w1, host: 10.0.1.2 }\n');
    await eventually('the edit is read', () => hosts() === '10.0.1.2');
    writeFileSync(file, '- { name: w1, host: 10.0.1.3 }\n- { name: w1, host: 10.0.1.4 }\n');
    await eventually('the broken version is refused', () => lines.find((line) => line.msg === 'fleet inventory source refused; its last good version stays'));
    expect(hosts()).to.equal('10.0.1.2');
    writeFileSync(path.join(dir, 'watched.next'), '- { name: w1, host: 10.0.1.5 }\n- { name: w2, host: 10.0.1.6 }\n');
    renameSync(path.join(dir, 'watched.next'), file); // a good version replaces it as editors save
    await eventually('the renamed file is read', () => hosts() === '10.0.1.5,10.0.1.6');
  });

  it('reads a URL with its headers, again at each refresh, and keeps the last good answer when it fails', async () => {
    let answer: { status: number; body: string } = { status: 200, body: JSON.stringify([{ name: 'u1', host: '10.0.2.1' }]) };
    const seen: Array<string | undefined> = [];
    const server = http.createServer((request, response) => {
      seen.push(request.headers.authorization);
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/nodes?token=secret`;
      const { inventory, lines } = open({ sources: [{ url, refresh: 100, headers: { authorization: 'Bearer cmdb-token' } }] });
      const [report] = await inventory.load();
      expect(report!.source).to.equal(url.replace('?token=secret', ''));
      expect(inventory.nodes.nodes.map((node) => node.name)).to.deep.equal(['u1']);
      expect(seen[0]).to.equal('Bearer cmdb-token');
      await inventory.watch();
      answer = { status: 200, body: JSON.stringify([{ name: 'u2', host: '10.0.2.2' }]) };
      await eventually('the refresh is read', () => inventory.nodes.node('u2'));
      answer = { status: 500, body: 'down' };
      await eventually('a failed refresh is logged', () => lines.find((line) => line.reason === 'answered HTTP 500'));
      answer = { status: 200, body: '[{"name": "u3", "host": "10.0.2.3", "port": "22"}]' };
      await eventually('a refused answer is logged', () => lines.find((line) => (line.problems as string[] | undefined)?.[0]?.includes('0.port (node u3)')));
      expect(inventory.nodes.nodes.map((node) => node.name)).to.deep.equal(['u2']);
      expect(JSON.stringify(lines)).not.to.include('cmdb-token').and.not.to.include('token=secret');
    } finally {
      server.close();
    }
  });

  it('runs a command (argv, no shell, PATH as its environment) for a JSON array; a failing one keeps the last good version', async () => {
    const script = path.join(dir, 'inventory.sh');
    writeFileSync(
      script,
      `#!/bin/sh\n[ -e "${dir}/fail" ] && { echo broken >&2; exit 3; }\nprintf '[{"name":"c1","host":"10.0.3.1","labels":{"env":"%s"}}]' "\${SECRET_ENV:-none}"\n`,
    );
    chmodSync(script, 0o755);
    process.env.SECRET_ENV = 'leaked';
    try {
      const { inventory, lines } = open({ sources: [{ command: [script, '$(touch pwned)'], refresh: 100 }] });
      await inventory.load();
      expect(inventory.nodes.node('c1')!.labels).to.deep.equal({ env: 'none' });
      writeFileSync(path.join(dir, 'fail'), '');
      await inventory.watch();
      await eventually('the failure is logged', () => lines.find((line) => line.reason === 'exited with 3' && line.stderr === 'broken\n'));
      expect(inventory.nodes.node('c1')).to.not.equal(undefined);
    } finally {
      delete process.env.SECRET_ENV;
    }
  });

  it('takes a name once across sources: the later source with a taken name is refused', async () => {
    writeFileSync(path.join(dir, 'first.yaml'), '- { name: same, host: 10.0.4.1 }\n');
    writeFileSync(path.join(dir, 'second.yaml'), '- { name: other, host: 10.0.4.2 }\n- { name: same, host: 10.0.4.3 }\n');
    const { inventory } = open({ sources: [{ file: 'first.yaml' }, { file: 'second.yaml' }] });
    const [, second] = await inventory.load();
    expect(describeInventoryProblem({ ...second!.problems[0]!, file: 'second.yaml' })).to.match(
      /^second\.yaml:2:11: 1\.name \(node same\): same is already a node of .*first\.yaml/,
    );
    expect(inventory.nodes.nodes.map((node) => node.host)).to.deep.equal(['10.0.4.1']);
  });

  it("finds host keys in known_hosts (plain, patterns, [host]:port, hashed); a node's own keys replace them", async () => {
    const hashedFile = path.join(dir, 'hashed_known_hosts');
    writeFileSync(hashedFile, `h3.example ${keyB}\n[h4.example]:2200 ${keyB}\n`);
    await run('ssh-keygen', ['-q', '-H', '-f', hashedFile]);
    writeFileSync(
      path.join(dir, 'known_hosts'),
      [
        '# comment',
        `h1.example,10.0.5.1 ${keyA}`,
        `*.web.example,!bad.web.example ${keyA}`,
        `@cert-authority *.ca.example ${keyB}`,
        'broken line',
        readFileSync(hashedFile, 'utf8'),
      ].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'keyed.yaml'),
      [
        '- { name: k1, host: H1.example }',
        '- { name: k2, host: x.web.example }',
        '- { name: k3, host: bad.web.example }',
        '- { name: k4, host: h3.example }',
        '- { name: k5, host: h4.example, port: 2200 }',
        '- { name: k6, host: h4.example }',
        '- { name: k7, host: n.ca.example }',
        `- { name: k8, host: h1.example, host_key: "${keyB}" }`,
        '',
      ].join('\n'),
    );
    const { inventory, lines } = open({ sources: [{ file: 'keyed.yaml' }], knownHosts: 'known_hosts' });
    await inventory.load();
    const keysOf = (name: string) => inventory.nodes.hostKeysOf(inventory.nodes.node(name)!);
    expect(keysOf('k1')).to.deep.equal([key(keyA)]);
    expect(keysOf('k2')).to.deep.equal([key(keyA)]);
    expect(keysOf('k3')).to.deep.equal([]);
    expect(keysOf('k4')).to.deep.equal([key(keyB)]);
    expect(keysOf('k5')).to.deep.equal([key(keyB)]);
    expect(keysOf('k6')).to.deep.equal([]);
    expect(keysOf('k7')).to.deep.equal([{ ...key(keyB), marker: 'cert-authority' }]);
    expect(keysOf('k8')).to.deep.equal([key(keyB)]);
    const listed = ['k1', 'k3', 'k7', 'k8'].map((name) => nodeListing(inventory.nodes.node(name)!, inventory.nodes));
    expect(listed.map((node) => node.host_keys_from)).to.deep.equal(['known_hosts', 'none', 'known_hosts', 'node']);
    expect(listed[2]!.host_keys).to.deep.equal([{ type: 'ssh-ed25519', fingerprint: key(keyB).fingerprint, marker: 'cert-authority' }]);
    expect(JSON.stringify(listed), 'no key material in a listing').not.to.include(keyA.split(' ')[1]!).and.not.to.include(keyB.split(' ')[1]!);
    expect(lines.find((line) => line.msg === 'fleet known_hosts lines left out')!.problems).to.deep.equal([
      'known_hosts:5: must be "<hosts> <type> <base64> [comment]"',
    ]);
  });

  it('follows known_hosts too: a key added there is used by the nodes without keys of their own', async () => {
    writeFileSync(path.join(dir, 'later_known_hosts'), `other.example ${keyA}\n`);
    writeFileSync(path.join(dir, 'later.yaml'), '- { name: later, host: later.example }\n');
    const { inventory } = open({ sources: [{ file: 'later.yaml' }], knownHosts: 'later_known_hosts' });
    await inventory.load();
    await inventory.watch();
    expect(inventory.nodes.hostKeysOf(inventory.nodes.node('later')!)).to.deep.equal([]);
    writeFileSync(path.join(dir, 'later_known_hosts'), `other.example ${keyA}\nlater.example ${keyB}\n`);
    await eventually('the new key is known', () => inventory.nodes.hostKeysOf(inventory.nodes.node('later')!).length === 1);
    expect(inventory.nodes.hostKeysOf(inventory.nodes.node('later')!)).to.deep.equal([key(keyB)]);
  });

  describe('selection', () => {
    const nodes = ['a', 'b', 'c', 'd'].map((name, index): FleetNode => ({
      name,
      host: `10.0.6.${index}`,
      port: 22,
      labels: { role: index < 3 ? 'web' : 'db', env: index % 2 ? 'prod' : 'dev' },
      source: 'x',
    }));
    const names = (list: FleetNode[]) => list.map((node) => node.name);
    const refusal = (selection: Parameters<typeof selectNodes>[1]) => {
      try {
        selectNodes(nodes, selection);
      } catch (err) {
        return err as GatewayError;
      }
      throw new Error('selected');
    };

    it('narrows by every label and by names, in inventory order', () => {
      expect(names(selectNodes(nodes, { match: { role: 'web' } }))).to.deep.equal(['a', 'b', 'c']);
      expect(names(selectNodes(nodes, { match: { role: 'web', env: 'prod' } }))).to.deep.equal(['b']);
      expect(names(selectNodes(nodes, { names: ['d', 'c', 'a'], match: { env: 'dev' } }))).to.deep.equal(['a', 'c']);
      expect(names(selectNodes(nodes, {}))).to.deep.equal(['a', 'b', 'c', 'd']);
    });

    it('is 400 no_nodes when empty and 400 too_many_nodes with the count past max', () => {
      expect(refusal({ match: { role: 'cache' } })).to.deep.include({ status: 400, code: 'no_nodes' });
      const tooMany = refusal({ match: { role: 'web' }, max: 2 });
      expect(tooMany).to.deep.include({ status: 400, code: 'too_many_nodes' });
      expect(tooMany.details).to.deep.equal({ count: 3, max: 2 });
    });
  });
});
