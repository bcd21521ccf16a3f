import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { failureBudget, parseHostKey, remoteCommandFits, removeStaleRunDirectories, type HostKey, type InventorySnapshot } from '@tkgate/plugin-ssh/engine';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/paths.js';
import { processesInGroup, startSshdNodes, type SshdFleet } from '../support/sshd-nodes.js';
import { certificateOf, inventoryOf, memoryLog, nodeOn, runFleet, stateOf, toolsIn } from './fleet-support.js';

const run = promisify(execFile);

/** A command run as `sh -c SCRIPT sh DIR ...`: the script finds the test's directory in $1. */
const sh = (script: string, dir: string, ...more: string[]) => ['sh', '-c', script, 'sh', dir, ...more];

// Real sshd servers (test/support/sshd-nodes.ts): four of them, several node names on one where a test allows.
describe('fleet runs on real sshd nodes', function () {
  this.timeout(120_000);
  let fleet: SshdFleet;
  let inventory: InventorySnapshot;
  let dir: string;

  before(async () => {
    fleet = await startSshdNodes(4);
    dir = tempDir('tkgate-fleet-');
    inventory = await inventoryOf(dir, [
      nodeOn(fleet, 0, 'web-1', { labels: { role: 'web' } }),
      nodeOn(fleet, 1, 'web-2', { labels: { role: 'web' } }),
      nodeOn(fleet, 2, 'web-3', { labels: { role: 'web' } }),
      ...['a', 'b', 'c'].map((suffix) => nodeOn(fleet, 0, `s0-${suffix}`)),
      ...['a', 'b', 'c'].map((suffix) => nodeOn(fleet, 1, `s1-${suffix}`)),
      nodeOn(fleet, 2, 'jump'),
      nodeOn(fleet, 3, 'behind', { jump: 'jump' }),
      nodeOn(fleet, 2, 'jump-pinned-wrong', { host_key: fleet.nodes[3]!.firstHostKey }),
      nodeOn(fleet, 3, 'behind-wrong-jump', { jump: 'jump-pinned-wrong' }),
    ]);
  });
  after(async () => fleet?.stop());

  it('runs on each node (its own server), with a certificate whose key id names the run and the person', async () => {
    const work = tempDir('tkgate-fleet-work-');
    const marks = path.join(dir, 'first');
    mkdirSync(marks);
    const result = await runFleet(
      fleet,
      inventory,
      ['web-1', 'web-2', 'web-3'],
      sh('echo "$PPID" > "$1/ran.$TKGATE_TEST_SSHD"; echo "out $TKGATE_TEST_SSHD"; echo err >&2', marks),
      {
        runId: 'run-first-0001',
        username: 'alice',
        tools: toolsIn(work),
      },
    );
    expect(result).to.deep.include({ status: 'succeeded' });
    expect(result.counts).to.deep.include({ succeeded: 3, failed: 0, pending: 0, running: 0 });
    expect(readdirSync(marks).sort()).to.deep.equal(['ran.0', 'ran.1', 'ran.2']);
    expect(result.output).to.deep.equal({
      'web-1': { stdout: 'out 0\n', stderr: 'err\n' },
      'web-2': { stdout: 'out 1\n', stderr: 'err\n' },
      'web-3': { stdout: 'out 2\n', stderr: 'err\n' },
    });
    for (const name of ['web-1', 'web-2', 'web-3']) {
      expect(stateOf(result, name)).to.deep.include({
        status: 'succeeded',
        exit_code: 0,
        signal: null,
        reason: null,
        output_bytes: 10,
        output_truncated: false,
      });
      expect(Date.parse(stateOf(result, name).ended_at!)).to.be.at.least(Date.parse(stateOf(result, name).started_at!));
    }
    expect(result.changes.map((change) => change.status).filter((status) => status === 'running')).to.have.length(3);
    for (const server of [0, 1, 2]) expect(fleet.nodes[server]!.log()).to.include('ID tkgate run=run-first-0001 user=alice (serial 0)');
    expect(fleet.nodes[3]!.log()).not.to.include('run-first-0001');
    expect(readdirSync(work), 'the run directory (key, certificate, configs) is removed').to.deep.equal([]);
  });

  it("makes the run's certificate as configured (key id, principals, validity, no forwarding) in a 0700 directory without the CA key", async () => {
    const work = tempDir('tkgate-fleet-work-');
    const marks = path.join(dir, 'certificate');
    mkdirSync(marks);
    const startedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const running = runFleet(fleet, inventory, ['web-1'], sh('touch "$1/started"; while [ ! -e "$1/release" ]; do sleep 0.05; done', marks), {
      runId: 'run-cert-0001',
      username: 'bob smith',
      startedAt,
      credentials: certificateOf(fleet, [fleet.user, 'deploy'], 600_000),
      tools: toolsIn(work),
    });
    await eventually('the command runs', () => existsSync(path.join(marks, 'started')));
    const [runDir] = readdirSync(work);
    const inside = path.join(work, runDir!);
    expect(statSync(inside).mode & 0o777).to.equal(0o700);
    const files = readdirSync(inside);
    expect(files).not.to.include('ca');
    for (const file of files.filter((name) => !/\.(pub|log)$/.test(name))) expect(statSync(path.join(inside, file)).mode & 0o777, file).to.equal(0o600);
    const shown = (await run('ssh-keygen', ['-L', '-f', path.join(inside, 'node-cert.pub')])).stdout;
    writeFileSync(path.join(marks, 'release'), '');
    expect(shown).to.include('Key ID: "tkgate run=run-cert-0001 user=bob?smith"');
    expect(shown).to.match(new RegExp(`Principals: \\n\\s+${fleet.user}\\n\\s+deploy\\n`));
    const local = (at: Date) => new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
    expect(shown).to.include(`Valid: from ${local(new Date(startedAt.getTime() - 60_000))} to ${local(new Date(startedAt.getTime() + 600_000))}`);
    expect(shown).to.match(/Extensions: \n\s+permit-user-rc\n/);
    expect((await running).status).to.equal('succeeded');
  });

  it('runs at most `parallel` nodes at once, several node names on one server', async () => {
    const marks = path.join(dir, 'parallel');
    mkdirSync(path.join(marks, 'running'), { recursive: true });
    // Each command counts the commands running beside it, then waits for the test's release.
    const script = 'mkdir "$1/running/$$"; ls "$1/running" | wc -l >> "$1/counts"; while [ ! -e "$1/release" ]; do sleep 0.05; done; rmdir "$1/running/$$"';
    const names = ['s0-a', 's0-b', 's0-c', 's1-a', 's1-b', 's1-c'];
    const running = runFleet(fleet, inventory, names, sh(script, marks), { parallel: 2 });
    await eventually('two commands run', () => readdirSync(path.join(marks, 'running')).length === 2);
    writeFileSync(path.join(marks, 'release'), '');
    const result = await running;
    expect(result.status).to.equal('succeeded');
    const counts = readFileSync(path.join(marks, 'counts'), 'utf8').trim().split('\n').map(Number);
    expect(counts).to.have.length(6);
    expect(Math.max(...counts)).to.equal(2);
    let at = 0;
    let most = 0;
    for (const change of result.changes) {
      at += change.status === 'running' ? 1 : -1;
      most = Math.max(most, at);
    }
    expect(most).to.equal(2);
  });

  it('gives the request context on stdin, as the last argument, or not at all', async () => {
    const marks = path.join(dir, 'context');
    mkdirSync(marks);
    const context = JSON.stringify({ payload: { service: 'nginx', note: 'it\'s "quoted"\nand\\n' }, username: 'alice' });
    const read = async (place: 'stdin' | 'argument' | 'none', script: string) => {
      const result = await runFleet(fleet, inventory, ['web-1'], sh(script, marks, 'fixed'), { context: { place, json: context } });
      expect(result.status, place).to.equal('succeeded');
      return readFileSync(path.join(marks, place), 'utf8');
    };
    expect(await read('stdin', 'cat > "$1/stdin"')).to.equal(context);
    expect(await read('argument', 'printf %s "$3" > "$1/argument"; [ "$2" = fixed ]')).to.equal(context);
    expect(await read('none', 'cat > "$1/none"; [ $# = 2 ]')).to.equal('');
  });

  it('passes hostile argv values as literal arguments', async () => {
    const marks = path.join(dir, 'hostile');
    mkdirSync(marks);
    const hostile = [
      `; touch ${marks}/pwned`,
      `$(touch ${marks}/pwned)`,
      `\`touch ${marks}/pwned\``,
      "it's",
      '"double"',
      'a\nb',
      '\\',
      '*',
      '$HOME',
      '-n',
      ' ',
      '&& true',
      '| cat',
      '#',
    ];
    const result = await runFleet(fleet, inventory, ['web-2'], ['sh', '-c', 'printf "%s\\0" "$@" > "$0/argv"', marks, ...hostile]);
    expect(result.status).to.equal('succeeded');
    expect(readFileSync(path.join(marks, 'argv'), 'utf8').split('\0').slice(0, -1)).to.deep.equal(hostile);
    expect(existsSync(path.join(marks, 'pwned'))).to.equal(false);
  });

  it("refuses a command longer than a node's shell takes, before any node", async () => {
    const long = ['echo', 'x'.repeat(140_000)];
    expect(remoteCommandFits(long)).to.equal(false);
    expect(remoteCommandFits(['echo', 'x'.repeat(100_000)])).to.equal(true);
    let refused: unknown;
    await runFleet(fleet, inventory, ['web-1'], long).catch((err) => (refused = err));
    expect(refused).to.be.instanceOf(RangeError);
  });

  it('keeps max_output_bytes of a node and lets its command go on', async () => {
    const marks = path.join(dir, 'output');
    mkdirSync(marks);
    const result = await runFleet(fleet, inventory, ['web-1'], sh('head -c 5000 /dev/zero | tr "\\0" x; echo done > "$1/done"', marks), {
      maxOutputBytes: 1_000,
    });
    expect(stateOf(result, 'web-1')).to.deep.include({ status: 'succeeded', output_bytes: 1_000, output_truncated: true });
    expect(result.output['web-1']!.stdout).to.equal('x'.repeat(1_000));
    expect(readFileSync(path.join(marks, 'done'), 'utf8')).to.equal('done\n');
  });

  it('stops starting nodes once max_failures is passed (a count or a percentage), unless keep_going', async () => {
    // Fails on server 1; the strict run takes one node at a time, in order.
    const names = ['s0-a', 's1-a', 's1-b', 's0-b'];
    const command = ['sh', '-c', '[ "$TKGATE_TEST_SSHD" != 1 ]'];
    const statuses = (result: Awaited<ReturnType<typeof runFleet>>) => result.nodes.map((node) => `${node.status}${node.reason ? `:${node.reason}` : ''}`);

    const strict = await runFleet(fleet, inventory, names, command, { parallel: 1, maxFailures: 0 });
    expect(statuses(strict)).to.deep.equal(['succeeded', 'failed', 'skipped:max_failures', 'skipped:max_failures']);
    expect(stateOf(strict, 's1-a').exit_code).to.equal(1);
    expect(strict).to.deep.include({ status: 'failed', reason: 'nodes_failed' });

    // With two failures tolerated (50% of 4) or keep_going, every node runs, in whatever order: all at once.
    const half = await runFleet(fleet, inventory, names, command, { parallel: 4, maxFailures: '50%' });
    expect(statuses(half)).to.deep.equal(['succeeded', 'failed', 'failed', 'succeeded']);

    const going = await runFleet(fleet, inventory, names, command, { parallel: 4, maxFailures: 0, keepGoing: true });
    expect(statuses(going)).to.deep.equal(['succeeded', 'failed', 'failed', 'succeeded']);
    expect(going.counts).to.deep.include({ succeeded: 2, failed: 2, skipped: 0 });
  });

  it("removes run directories of gateways that are gone, never a live one's", async () => {
    const work = tempDir('tkgate-fleet-work-');
    for (const name of ['tkgate-ssh-999999999-abc', `tkgate-ssh-${process.pid}-abc`, 'tkgate-ssh-1-abc', 'unrelated']) mkdirSync(path.join(work, name));
    await removeStaleRunDirectories(work, memoryLog().log);
    expect(readdirSync(work).sort()).to.deep.equal([`tkgate-ssh-${process.pid}-abc`, 'tkgate-ssh-1-abc', 'unrelated'].sort());
  });

  it('counts a percentage of max_failures of the selected nodes, rounded down', () => {
    expect([failureBudget('10%', 15), failureBudget('10%', 9), failureBudget('50%', 5), failureBudget('100%', 7), failureBudget(3, 1)]).to.deep.equal([
      1, 0, 2, 7, 3,
    ]);
  });

  it("reaches a node through its jump host, with the run's user and certificate, both pinned", async () => {
    const marks = path.join(dir, 'jump');
    mkdirSync(marks);
    const result = await runFleet(fleet, inventory, ['behind'], sh('echo "$TKGATE_TEST_SSHD" > "$1/ran"', marks), { runId: 'run-jump-0001' });
    expect(stateOf(result, 'behind')).to.deep.include({ status: 'succeeded', exit_code: 0 });
    expect(readFileSync(path.join(marks, 'ran'), 'utf8')).to.equal('3\n');
    expect(fleet.nodes[2]!.log(), 'the jump host').to.include('ID tkgate run=run-jump-0001 user=alice');
    expect(fleet.nodes[3]!.log(), 'the node').to.include('ID tkgate run=run-jump-0001 user=alice');
  });

  it('runs nothing behind a jump host whose key does not match, and logs the key it offered', async () => {
    const marks = path.join(dir, 'wrong-jump');
    mkdirSync(marks);
    const before = fleet.nodes[3]!.log().length;
    const result = await runFleet(fleet, inventory, ['behind-wrong-jump'], sh('touch "$1/ran"', marks));
    expect(stateOf(result, 'behind-wrong-jump')).to.deep.include({ status: 'failed', reason: 'host_key_mismatch', exit_code: null });
    expect(existsSync(path.join(marks, 'ran'))).to.equal(false);
    expect(fleet.nodes[3]!.log().slice(before)).not.to.include('Accepted');
    const logged = result.lines.find((line) => line.msg === 'fleet node not run: its host key does not match the pinned keys');
    expect(logged).to.deep.include({
      node: 'behind-wrong-jump',
      jump: 'jump-pinned-wrong',
      offered_fingerprint: (parseHostKey(fleet.nodes[2]!.hostKey) as HostKey).fingerprint,
    });
  });

  it('logs in with a key instead of a certificate; a key the node does not know is auth_failed', async () => {
    const before = fleet.nodes[1]!.log().length;
    const result = await runFleet(fleet, inventory, ['web-2'], ['true'], { credentials: { key: fleet.userKey } });
    expect(stateOf(result, 'web-2')).to.deep.include({ status: 'succeeded' });
    expect(fleet.nodes[1]!.log().slice(before)).to.match(/Accepted publickey for \S+ from .* ED25519 SHA256:/);

    const other = await runFleet(fleet, inventory, ['web-2'], ['true'], { credentials: certificateOf(fleet, ['somebody-else']) });
    expect(stateOf(other, 'web-2')).to.deep.include({ status: 'failed', reason: 'auth_failed' });
  });

  it('ends a node past node_timeout timed_out, its command group ended on the node', async () => {
    const marks = path.join(dir, 'timeout');
    mkdirSync(marks);
    // node_timeout counts from the node's start, its connection included: long enough for a loaded machine's logins.
    const result = await runFleet(fleet, inventory, ['web-3'], sh('echo $$ > "$1/pid.$TKGATE_TEST_SSHD"; sleep 300', marks), { nodeTimeoutMs: 10_000 });
    expect(stateOf(result, 'web-3')).to.deep.include({ status: 'timed_out', reason: 'node_timeout', signal: 'SIGTERM' });
    expect(result).to.deep.include({ status: 'failed', reason: 'nodes_failed' });
    const group = Number(readFileSync(path.join(marks, 'pid.2'), 'utf8'));
    await eventually('the command group is gone from the node', () => processesInGroup(group).length === 0);
  });
});
