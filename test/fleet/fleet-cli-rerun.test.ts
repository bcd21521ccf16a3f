import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { startSshdNodes, type SshdFleet } from '../support/sshd-nodes.js';
import { withGateway } from '../support/suite.js';
import { writeToolkit } from '../support/toolkit-files.js';
import { fleetEndpoint, nodeOn } from './fleet-support.js';

/** `tkgate runs rerun ID [--all]` (docs/fleet.md, "Reruns"): the route's command, from the server, on real sshd nodes. */
for (const dialect of dialects) {
  describe(`tkgate runs rerun (${dialect.name})`, function () {
    this.timeout(120_000);
    const dir = tempDir('tkgate-fleet-cli-');
    const toolkits = tempDir('tkgate-fleet-cli-toolkits-');
    const marks = tempDir('tkgate-fleet-cli-marks-');
    const inventoryFile = path.join(dir, 'nodes.json');
    let fleet: SshdFleet;

    // down-1 listens nowhere (port 1: refused, unreachable) until the inventory is edited.
    const nodesWith = (downPort: number) => [
      nodeOn(fleet, 0, 'up-1', { labels: { role: 'web' } }),
      nodeOn(fleet, 1, 'up-2', { labels: { role: 'web' } }),
      nodeOn(fleet, 1, 'down-1', { labels: { role: 'web' }, port: downPort }),
    ];

    before(async () => {
      fleet = await startSshdNodes(2);
      writeFileSync(inventoryFile, JSON.stringify(nodesWith(1)));
      const endpoint = (pathName: string, script: string, extra: Record<string, unknown> = {}) =>
        fleetEndpoint(fleet, pathName, ['sh', '-c', script, 'sh', marks, '$payload.note'], { keep_going: true, ...extra });
      writeToolkit(toolkits, 'fleet.yaml', {
        name: 'fleet',
        type: 'app',
        endpoints: [
          endpoint('mark', 'touch "$1/mark-$TKGATE_TEST_SSHD-$$"'),
          endpoint('slow', 'sleep 60'),
          endpoint('token', 'echo "$2" > "$1/token-$$"', {
            client_filter: { allowed_fields: ['note'], required_fields: ['note'], field_rules: { note: { type: 'string', secret: true } } },
          }),
        ],
      });
    });
    after(async () => {
      await fleet?.stop();
    });

    const fleetConfig = () => ({ fleet: { inventory: [{ file: inventoryFile }], view_power: 10 }, runs: { cancel_grace: '1s' } });
    const s = withGateway(dialect, [{ username: 'ann', power: 10 }], fleetConfig(), { toolkitsDir: toolkits });
    const cliConfig = () => writeConfig({ ...fleetConfig(), db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: false } });
    const rerun = (...args: string[]) => runCli(['runs', 'rerun', ...args, '--config', cliConfig()]);
    const newRunOf = (stdout: string) => /^run ([0-9a-f]{32}): /.exec(stdout)?.[1];
    const ended = (id: string, token: string) =>
      eventually(
        `run ${id} ends`,
        async () => {
          const reply = await call('GET', `${s.gateway.base}/runs/${id}`, { token });
          return ['queued', 'running', 'awaiting_approval'].includes(reply.body.data.status) ? undefined : reply.body.data;
        },
        60_000,
      );
    const names = (run: { nodes: Array<{ name: string }> }) => run.nodes.map((node) => node.name);

    it('reruns only the failed nodes (actor cli, rerun_of), and with --all every node', async () => {
      const token = await s.login('ann');
      const first = await toolkitClient(s.gateway.base, token).post('fleet', 'mark', { note: 'n' });
      expect(first.status).to.equal(202);
      const id = first.body.data.run_id as string;
      const run = await ended(id, token);
      expect(run.node_counts).to.include({ succeeded: 2, failed: 1 });
      expect(readdirSync(marks).filter((name) => name.startsWith('mark-'))).to.have.length(2);

      // down-1 comes back: the gateway reloads the inventory, and so does the CLI's own start.
      writeFileSync(inventoryFile, JSON.stringify(nodesWith(fleet.nodes[1]!.port)));
      await eventually('the inventory is reloaded', async () => {
        const nodes = await call('GET', `${s.gateway.base}/fleet/nodes`, { token });
        return nodes.body.data.nodes.find((node: { name: string; port: number }) => node.name === 'down-1' && node.port !== 1);
      });
      const failedOnly = await rerun(id);
      expect(failedOnly.code, failedOnly.stderr).to.equal(0);
      const rerunId = newRunOf(failedOnly.stdout)!;
      expect(failedOnly.stdout).to.equal(`run ${rerunId}: queued (rerun of ${id}, its failed nodes)\n`);
      const again = await ended(rerunId, token);
      expect(again).to.include({ status: 'succeeded', rerun_of: id, node_count: 1 });
      expect(again.actor).to.include({ kind: 'cli', username: 'ann' });
      expect(names(again)).to.deep.equal(['down-1']);
      expect(readdirSync(marks).filter((name) => name.startsWith('mark-1-'))).to.have.length(2);

      const all = await rerun(id, '--all');
      expect(all.code, all.stderr).to.equal(0);
      const allRun = await ended(newRunOf(all.stdout)!, token);
      expect(allRun).to.include({ status: 'succeeded', rerun_of: id, node_count: 3 });
      expect(allRun.actor).to.include({ kind: 'cli' });
      expect(names(allRun)).to.deep.equal(['down-1', 'up-1', 'up-2']);
      expect(readdirSync(marks).filter((name) => name.startsWith('mark-'))).to.have.length(6);

      // Nothing failed in the rerun: the route's refusal, word for word.
      const nothing = await rerun(rerunId);
      expect(nothing.code).to.equal(1);
      expect(nothing.stderr).to.include(`run ${rerunId}: every node of the run succeeded (not_rerunnable: no_failed_nodes)`);
      const route = await call('POST', `${s.gateway.base}/runs/${rerunId}/rerun`, { token, body: {} });
      expect(route.status).to.equal(409);
      expect(route.body.error).to.deep.include({ code: 'not_rerunnable', message: 'every node of the run succeeded', details: { reason: 'no_failed_nodes' } });
    });

    it('refuses what the route refuses: a run not ended, a run without nodes, an unknown id, a bad flag', async () => {
      const token = await s.login('ann');
      const slow = (await toolkitClient(s.gateway.base, token).post('fleet', 'slow', { note: 'n' })).body.data.run_id as string;
      const running = await rerun(slow);
      expect(running.code).to.equal(1);
      expect(running.stderr).to.match(new RegExp(`run ${slow}: the run has not ended \\((queued|running)\\) \\(not_rerunnable: not_ended\\)`));
      await call('POST', `${s.gateway.base}/runs/${slow}/cancel`, { token });
      await ended(slow, token);

      // A run of no fleet endpoint (an exec run, recorded as one is).
      const plain = { ...(await s.bed.db('runs').where({ id: slow }).first()), id: 'e'.repeat(32), node_count: null, replay: null };
      await s.bed.db('runs').insert(plain);
      const noNodes = await rerun(plain.id);
      expect(noNodes.code).to.equal(1);
      expect(noNodes.stderr).to.include(`run ${plain.id}: only a run with nodes can be rerun (not_rerunnable: no_nodes)`);

      const unknown = await rerun('0'.repeat(32));
      expect(unknown.code).to.equal(1);
      expect(unknown.stderr).to.include(`no run ${'0'.repeat(32)}`);

      const badPayload = await rerun(slow, '--payload', '[1]');
      expect(badPayload.code).to.equal(2);
      expect(badPayload.stderr).to.include('--payload must be a JSON object');
      const badParam = await rerun(slow, '--param', 'note');
      expect(badParam.code).to.equal(2);
      expect(badParam.stderr).to.include('--param note: give it as name=value');
    });

    it('refuses a rerun whose secret field is not sent again, naming it; --param or --payload sends it', async () => {
      const token = await s.login('ann');
      writeFileSync(inventoryFile, JSON.stringify(nodesWith(1)));
      await eventually('down-1 is down again', async () => {
        const nodes = await call('GET', `${s.gateway.base}/fleet/nodes`, { token });
        return nodes.body.data.nodes.find((node: { name: string; port: number }) => node.name === 'down-1' && node.port === 1);
      });
      const id = (await toolkitClient(s.gateway.base, token).post('fleet', 'token', { note: 'one-time-1' })).body.data.run_id as string;
      expect((await ended(id, token)).node_counts).to.include({ succeeded: 2, failed: 1 });
      const without = await rerun(id, '--all');
      expect(without.code).to.equal(1);
      expect(without.stderr).to.include(`run ${id}: rerun refused (400 invalid_payload)`);
      expect(without.stderr).to.match(/: note \(/);
      const withParam = await rerun(id, '--param', 'note=one-time-2');
      expect(withParam.code, withParam.stderr).to.equal(0);
      const paramRun = await ended(newRunOf(withParam.stdout)!, token);
      expect(paramRun).to.include({ rerun_of: id, node_count: 1 });
      expect(paramRun.actor).to.include({ kind: 'cli' });
      const withPayload = await rerun(id, '--all', '--payload', '{"note": "one-time-3"}');
      expect(withPayload.code, withPayload.stderr).to.equal(0);
      expect(await ended(newRunOf(withPayload.stdout)!, token)).to.include({ rerun_of: id, node_count: 3 });
    });
  });
}
