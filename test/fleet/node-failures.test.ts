import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parseHostKey, type HostKey, type InventorySnapshot, type NodeState } from '@tkgate/plugin-ssh/engine';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/private-mariadb.js';
import { tempDir } from '../support/paths.js';
import { processesInGroup, startSshdNodes, type SshdFleet } from '../support/sshd-nodes.js';
import { inventoryOf, nodeOn, runFleet, stateOf } from './fleet-support.js';

/** Writes its process group (its pid: the command starts a group of its own) to `$1/pid.<server>`, then waits for `$1/release`. */
const waiting = (dir: string, before = '') => [
  'sh',
  '-c',
  `${before}echo $$ > "$1/pid.$TKGATE_TEST_SSHD"; while [ ! -e "$1/release" ]; do sleep 0.05; done`,
  'sh',
  dir,
];

const groupOf = (dir: string, server: number) => Number(readFileSync(path.join(dir, `pid.${server}`), 'utf8'));
const started = (dir: string, server: number) => existsSync(path.join(dir, `pid.${server}`));

// What goes wrong on real nodes: cancels and timeouts reach the node's process group, lost and vanished servers,
// host keys that do not match or are not known, logins refused.
describe('fleet nodes that fail, stop or vanish (real sshd)', function () {
  this.timeout(120_000);
  let fleet: SshdFleet;
  let inventory: InventorySnapshot;
  let root: string;
  let count = 0;
  const marks = () => {
    const dir = path.join(root, `case-${++count}`);
    mkdirSync(dir);
    return dir;
  };

  before(async () => {
    fleet = await startSshdNodes(3);
    root = tempDir('tkgate-fleet-failures-');
    inventory = await inventoryOf(root, [
      nodeOn(fleet, 0, 'n0'),
      nodeOn(fleet, 1, 'n1'),
      nodeOn(fleet, 0, 'n0-again'),
      nodeOn(fleet, 2, 'n2'),
      { name: 'unpinned', host: fleet.nodes[0]!.address, port: fleet.nodes[0]!.port, user: fleet.user },
      nodeOn(fleet, 0, 'nothing-there', { port: await freePort(), host: '127.0.0.1' }),
    ]);
  });
  after(async () => fleet?.stop());

  it('a cancel sends SIGTERM to the command group on each running node; pending nodes end cancelled', async () => {
    const dir = marks();
    const stop = new AbortController();
    const running = runFleet(fleet, inventory, ['n0', 'n1', 'n0-again'], waiting(dir), { parallel: 2, signal: stop.signal });
    await eventually('both commands run', () => started(dir, 0) && started(dir, 1));
    stop.abort();
    const result = await running;
    for (const name of ['n0', 'n1']) expect(stateOf(result, name), name).to.deep.include({ status: 'cancelled', reason: 'cancelled_by', signal: 'SIGTERM' });
    expect(stateOf(result, 'n0-again')).to.deep.include({ status: 'cancelled', reason: 'cancelled_by', started_at: null });
    expect(result).to.deep.include({ status: 'failed', reason: 'cancelled_by' });
    expect(result.output, "the wrapper's reports are no output, nor is its shell's word on the command's end").to.deep.equal({});
    for (const server of [0, 1]) {
      const group = groupOf(dir, server);
      await eventually(`the command group on server ${server} is gone`, () => processesInGroup(group).length === 0);
    }
  });

  it('a command that ignores SIGTERM gets SIGKILL after the grace, on the node', async () => {
    const dir = marks();
    const stop = new AbortController();
    const running = runFleet(fleet, inventory, ['n1'], waiting(dir, "trap '' TERM; "), { signal: stop.signal, graceMs: () => 1_000 });
    await eventually('the command runs', () => started(dir, 1));
    const group = groupOf(dir, 1);
    stop.abort();
    const result = await running;
    expect(stateOf(result, 'n1')).to.deep.include({ status: 'cancelled', reason: 'cancelled_by', signal: 'SIGKILL' });
    await eventually('the command group is gone', () => processesInGroup(group).length === 0);
  });

  it('a node whose sshd is killed mid-run ends connection_lost while the others go on; its command is ended', async () => {
    const dir = marks();
    const changes: NodeState[] = [];
    const running = runFleet(fleet, inventory, ['n0', 'n1'], waiting(dir), { onNodeChange: (state) => changes.push({ ...state }) });
    await eventually('both commands run', () => started(dir, 0) && started(dir, 1));
    const group = groupOf(dir, 1);
    await fleet.nodes[1]!.kill();
    try {
      await eventually('n1 ends connection_lost', () => changes.find((change) => change.name === 'n1' && change.reason === 'connection_lost'));
      expect(
        changes.find((change) => change.name === 'n0' && change.status !== 'running'),
        'n0 is still running',
      ).to.equal(undefined);
      await eventually('the command group on the lost node is gone', () => processesInGroup(group).length === 0);
      writeFileSync(path.join(dir, 'release'), '');
      const result = await running;
      expect(stateOf(result, 'n0')).to.deep.include({ status: 'succeeded', exit_code: 0 });
      expect(stateOf(result, 'n1')).to.deep.include({ status: 'failed', reason: 'connection_lost', exit_code: null });
      // ssh's own word on the lost connection comes in the node's stderr (it writes it there, not to its log).
      expect(result.output.n1).to.deep.equal({ stdout: '', stderr: `Connection to ${fleet.nodes[1]!.address} closed by remote host.\r\n` });
      expect(result).to.deep.include({ status: 'failed', reason: 'nodes_failed' });
    } finally {
      await fleet.nodes[1]!.restart();
    }
  });

  it('a node whose sshd is gone before the run is unreachable; so is a port nobody listens on', async () => {
    await fleet.nodes[1]!.kill();
    try {
      const result = await runFleet(fleet, inventory, ['n1', 'nothing-there', 'n0'], ['true'], { keepGoing: true });
      expect(stateOf(result, 'n1')).to.deep.include({ status: 'failed', reason: 'unreachable' });
      expect(stateOf(result, 'nothing-there')).to.deep.include({ status: 'failed', reason: 'unreachable' });
      expect(stateOf(result, 'n0')).to.deep.include({ status: 'succeeded' });
    } finally {
      await fleet.nodes[1]!.restart();
    }
  });

  it('a node that vanishes without closing the connection is found lost by keepalives; its command ends once it is back', async () => {
    const dir = marks();
    const changes: NodeState[] = [];
    // connect_timeout 2 s: a probe a second, three unanswered ones end the connection.
    const running = runFleet(fleet, inventory, ['n2', 'n0'], waiting(dir), { connectTimeoutMs: 2_000, onNodeChange: (state) => changes.push({ ...state }) });
    await eventually('both commands run', () => started(dir, 2) && started(dir, 0));
    const group = groupOf(dir, 2);
    await fleet.nodes[2]!.pause();
    try {
      await eventually('n2 ends connection_lost', () => changes.find((change) => change.name === 'n2' && change.reason === 'connection_lost'), 30_000);
      expect(changes.find((change) => change.name === 'n0' && change.status !== 'running')).to.equal(undefined);
    } finally {
      fleet.nodes[2]!.resume();
    }
    await eventually('the command group on the vanished node is gone once it notices', () => processesInGroup(group).length === 0, 30_000);
    writeFileSync(path.join(dir, 'release'), '');
    expect(stateOf(await running, 'n0').status).to.equal('succeeded');
  });

  it('a node presenting another host key runs nothing, and the key it offered is logged', async () => {
    const dir = marks();
    await fleet.nodes[2]!.presentAnotherHostKey();
    const before = fleet.nodes[2]!.log().length;
    const result = await runFleet(fleet, inventory, ['n2'], ['sh', '-c', 'touch "$1/ran"', 'sh', dir]);
    expect(stateOf(result, 'n2')).to.deep.include({ status: 'failed', reason: 'host_key_mismatch', exit_code: null });
    expect(existsSync(path.join(dir, 'ran'))).to.equal(false);
    expect(fleet.nodes[2]!.log().slice(before)).not.to.include('Accepted');
    expect(result.lines.find((line) => line.msg === 'fleet node not run: its host key does not match the pinned keys')).to.deep.include({
      node: 'n2',
      offered_fingerprint: (parseHostKey(fleet.nodes[2]!.hostKey) as HostKey).fingerprint,
      pinned: [(parseHostKey(fleet.nodes[2]!.firstHostKey) as HostKey).fingerprint],
    });
  });

  it('a node with no pinned key is host_key_unknown, without a connection', async () => {
    const before = fleet.nodes[0]!.log();
    const result = await runFleet(fleet, inventory, ['unpinned'], ['true']);
    expect(stateOf(result, 'unpinned')).to.deep.include({ status: 'failed', reason: 'host_key_unknown' });
    expect(fleet.nodes[0]!.log().slice(before.length)).not.to.include('Connection from');
  });

  it('credentials that cannot be used fail every node auth_failed without a connection', async () => {
    const before = fleet.nodes[0]!.log();
    const result = await runFleet(fleet, inventory, ['n0', 'n0-again'], ['true'], { credentials: { key: 'not a key' }, keepGoing: true });
    expect(result.nodes.map((node) => node.reason)).to.deep.equal(['auth_failed', 'auth_failed']);
    expect(result.lines.find((line) => line.msg === 'fleet run credentials unusable; no node is run')).to.deep.include({
      reason: 'the key cannot be read (an unencrypted OpenSSH or PEM private key is needed)',
    });
    expect(fleet.nodes[0]!.log().slice(before.length)).not.to.include('Connection from');
  });
});
