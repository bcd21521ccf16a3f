import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { startInProcess } from '../support/gateway-in-process.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { SseFollower } from '../support/sse-client.js';
import { startSshdNodes, type SshdFleet } from '../support/sshd-nodes.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, writeToolkit } from '../support/toolkit-files.js';
import { fleetEndpoint, nodeOn } from './fleet-support.js';

/**
 * Marks where and how many at once: a file per running command in $1/running (counted into $1/concurrency), the
 * server it ran on into $1/where, its arguments (the path's service and the payload's note) into $1/args.<pid>.
 */
const RESTART = [
  'mkdir -p "$1/running"; touch "$1/running/$$"; ls "$1/running" | wc -l >> "$1/concurrency"; echo "$TKGATE_TEST_SSHD" >> "$1/where"',
  'printf "%s\\n%s" "$2" "$3" > "$1/args.$$"; sleep 0.4; rm "$1/running/$$"; echo "restarted $2"; echo "warn $2" >&2',
].join('; ');
const HOSTILE = `; touch /tmp/tkgate-pwned $(id) \`id\` 'single' "double"\nsecond line`;

for (const dialect of dialects) {
  describe(`fleet runs through HTTP, two instances (${dialect.name})`, function () {
    this.timeout(120_000);
    const dir = tempDir('tkgate-fleet-http-');
    const toolkits = tempDir('tkgate-fleet-toolkits-');
    const inventoryFile = path.join(dir, 'nodes.json');
    let fleet: SshdFleet;
    let other: GatewayProcess;
    let unreachablePort: number;
    const marks = (name: string) => {
      const at = path.join(dir, name);
      mkdirSync(at, { recursive: true });
      return at;
    };

    const nodesWith = (downPort: number) => [
      ...[0, 1, 2, 0, 1, 2].map((server, i) => nodeOn(fleet, server, `web-${i + 1}`, { labels: { role: 'web' } })),
      nodeOn(fleet, 0, 'down-1', { labels: { role: 'web' }, port: downPort }),
      nodeOn(fleet, 1, 'down-2', { labels: { role: 'web' }, port: downPort }),
      nodeOn(fleet, 2, 'db-1', { labels: { role: 'db' } }),
    ];

    before(async () => {
      process.env.FLEET_TEST_SECRET_VALUE = 'fleet-secret-value-4711';
      fleet = await startSshdNodes(3);
      // A port nothing listens on at the first node's address: the connection is refused (unreachable).
      unreachablePort = 1;
      writeFileSync(inventoryFile, JSON.stringify(nodesWith(unreachablePort)));
      const endpoint = (pathName: string, script: string, extra: Record<string, unknown> = {}) =>
        fleetEndpoint(fleet, pathName, ['sh', '-c', script, 'sh', marks(pathName.split('/')[0]!), '$path.service', '$payload.note'], extra);
      writeToolkit(toolkits, 'fleet.yaml', {
        name: 'fleet',
        type: 'app',
        endpoints: [
          endpoint('restart/{service}', RESTART, { parallel: 3, keep_going: true, audit_fields: ['note'] }),
          endpoint('slow/{service}', 'echo started; sleep 60', { parallel: 8 }),
          endpoint('nowhere/{service}', 'true', { nodes: { match: { role: 'none' } } }),
          endpoint('few/{service}', 'true', { nodes: { match: { role: 'web' }, max: 2 } }),
          endpoint('say/{service}', 'echo "said: $3"', { nodes: { match: { role: 'db' } } }),
          // Never called: its key's secret is a value the gateway now masks in every output.
          endpoint('keyed/{service}', 'true', { ssh: { key: { secret: 'env:FLEET_TEST_SECRET_VALUE' } } }),
          endpoint('token/{service}', 'echo "token $3" > "$1/token-$(hostname)-$$"', {
            nodes: { match: { role: 'db' } },
            client_filter: { allowed_fields: ['note'], required_fields: ['note'], field_rules: { note: { type: 'string', secret: true } } },
          }),
          endpoint('approved/{service}', 'echo "approved $2"', { nodes: { match: { role: 'db' } }, approval: { approvers: { min_power: 50 } } }),
        ],
      });
    });
    after(async () => {
      await other?.stop();
      await fleet?.stop();
    });

    const fleetConfig = () => ({ fleet: { inventory: [{ file: inventoryFile }], view_power: 50 }, runs: { cancel_grace: '1s' } });
    const s = withGateway(
      dialect,
      [
        { username: 'ann', power: 10 },
        { username: 'vic', power: 50 },
      ],
      fleetConfig(),
      { toolkitsDir: toolkits },
    );
    before(async () => {
      other = await startInProcess({
        config: { ...fleetConfig(), toolkits: { dir: toolkits, watch: true }, plugins: pluginsWithTestFunctions, db: s.bed.dbConfig },
      });
    });

    const ended = (base: string, id: string, token: string) =>
      eventually(
        `run ${id} ends`,
        async () => {
          const reply = await call('GET', `${base}/runs/${id}`, { token });
          return ['queued', 'running', 'awaiting_approval'].includes(reply.body.data.status) ? undefined : reply.body.data;
        },
        60_000,
      );

    it('runs on the labelled nodes N at a time, marks the unreachable ones with their reason, streams node-tagged output, reruns only those', async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'restart/nginx', { note: HOSTILE });
      expect(reply.status).to.equal(202);
      const id = reply.body.data.run_id as string;
      // Followed on the other instance.
      const follower = new SseFollower(`${other.base}/runs/${id}/output`, { token });
      const run = await ended(s.gateway.base, id, token);
      await follower.done;
      expect(run).to.include({ status: 'failed', reason: 'nodes_failed', node_count: 8 });
      expect(run.node_counts).to.deep.equal({ pending: 0, running: 0, succeeded: 6, failed: 2, timed_out: 0, cancelled: 0, skipped: 0 });
      const byName = Object.fromEntries((run.nodes as Array<{ name: string }>).map((node) => [node.name, node]));
      expect(Object.keys(byName).sort()).to.deep.equal(['down-1', 'down-2', 'web-1', 'web-2', 'web-3', 'web-4', 'web-5', 'web-6']);
      expect(byName['down-1']).to.include({ status: 'failed', reason: 'unreachable' });
      expect(byName['web-1']).to.include({ status: 'succeeded', exit_code: 0, reason: null });
      // parallel: 3, and each server ran its two web nodes (db-1 was not selected).
      const at = path.join(dir, 'restart');
      const concurrency = readFileSync(path.join(at, 'concurrency'), 'utf8').trim().split('\n').map(Number);
      expect(Math.max(...concurrency)).to.be.at.most(3);
      expect(readFileSync(path.join(at, 'where'), 'utf8').trim().split('\n').sort()).to.deep.equal(['0', '0', '1', '1', '2', '2']);
      // Hostile values arrive as literal arguments.
      const args = readdirSync(at).filter((name) => name.startsWith('args.'));
      expect(args).to.have.length(6);
      for (const file of args) expect(readFileSync(path.join(at, file), 'utf8')).to.equal(`nginx\n${HOSTILE}`);
      // The certificate's key id in each sshd's log names the run and the person.
      for (const node of fleet.nodes) expect(node.log()).to.include(`ID tkgate run=${id} user=ann`);

      // The stream: node-tagged stdout and stderr, node events, all numbered in one sequence, then end.
      const events = follower.events;
      expect(events.at(-1)!.event).to.equal('end');
      const numbered = events.filter((event) => event.event !== 'end').map((event) => Number(event.id));
      expect(numbered).to.deep.equal([...numbered].sort((a, b) => a - b));
      expect(new Set(numbered).size).to.equal(numbered.length);
      const stdout = events.filter((event) => event.event === 'stdout').map((event) => JSON.parse(event.data));
      expect(stdout).to.deep.include({ node: 'web-1', text: 'restarted nginx\n' });
      const nodeEvents = events.filter((event) => event.event === 'node').map((event) => JSON.parse(event.data));
      expect(nodeEvents).to.deep.include({ node: 'down-2', status: 'failed', exit_code: null, reason: 'unreachable' });
      expect(nodeEvents).to.deep.include({ node: 'web-3', status: 'running', exit_code: null, reason: null });

      // One node's output, plain, with its run-wide numbers; the text form with node prefixes.
      const one = new SseFollower(`${s.gateway.base}/runs/${id}/output?node=web-2`, { token });
      await one.done;
      const web2 = one.events.filter((event) => event.event !== 'end');
      expect(web2.map((event) => [event.event, event.data]).sort()).to.deep.equal([
        ['stderr', 'warn nginx\n'],
        ['stdout', 'restarted nginx\n'],
      ]);
      for (const event of web2) expect(events.find((each) => each.id === event.id)!.data).to.include('web-2');
      const text = await call('GET', `${s.gateway.base}/runs/${id}/output`, { token });
      expect(text.body).to.include('web-4: restarted nginx\n');
      const plain = await call('GET', `${s.gateway.base}/runs/${id}/output?node=web-4`, { token });
      // (A node's login shell may print notes of its own on stderr.)
      expect((plain.body as string).split('\n')).to.include.members(['restarted nginx', 'warn nginx']);
      expect(plain.body as string).not.to.include('web-4:');

      // The node table, paged and filtered.
      const failed = await call('GET', `${other.base}/runs/${id}/nodes?status=failed`, { token });
      expect(failed.body.data.nodes.map((node: { name: string }) => node.name)).to.deep.equal(['down-1', 'down-2']);
      const page1 = await call('GET', `${s.gateway.base}/runs/${id}/nodes?limit=5`, { token });
      expect(page1.body.data.nodes).to.have.length(5);
      const page2 = await call('GET', `${s.gateway.base}/runs/${id}/nodes?limit=5&cursor=${page1.body.data.next_cursor}`, { token });
      expect(page2.body.data.next_cursor).to.equal(null);
      expect([...page1.body.data.nodes, ...page2.body.data.nodes].map((node: { name: string }) => node.name)).to.deep.equal(Object.keys(byName).sort());
      // A page that ends at the last node says so: no cursor to an empty page.
      const whole = await call('GET', `${s.gateway.base}/runs/${id}/nodes?limit=${Object.keys(byName).length}`, { token });
      expect(whole.body.data.nodes).to.have.length(Object.keys(byName).length);
      expect(whole.body.data.next_cursor).to.equal(null);

      // The two nodes come back (the inventory is edited and hot-reloaded); a rerun from the other instance takes only them.
      writeFileSync(
        inventoryFile,
        JSON.stringify(nodesWith(fleet.nodes[0]!.port).map((node) => (node.name === 'down-2' ? { ...node, port: fleet.nodes[1]!.port } : node))),
      );
      await eventually('the inventory is reloaded', async () => {
        const nodes = await call('GET', `${s.gateway.base}/fleet/nodes?label.role=web`, { token: await s.login('vic') });
        return nodes.body.data.nodes.find((node: { name: string; port: number }) => node.name === 'down-1' && node.port !== unreachablePort);
      });
      await eventually('the other instance reloaded it too', async () => {
        const nodes = await call('GET', `${other.base}/fleet/nodes?label.role=web`, { token: await s.login('vic') });
        return nodes.body.data.nodes.find((node: { name: string; port: number }) => node.name === 'down-2' && node.port !== unreachablePort);
      });
      const again = await call('POST', `${other.base}/runs/${id}/rerun`, { token, body: { nodes: 'failed' } });
      expect(again.status).to.equal(202);
      const rerunId = again.body.data.run_id as string;
      expect(again.headers.get('location')).to.equal(`/api/runs/${rerunId}`);
      const rerun = await ended(s.gateway.base, rerunId, token);
      expect(rerun).to.include({ status: 'succeeded', rerun_of: id, node_count: 2 });
      expect((rerun.nodes as Array<{ name: string }>).map((node) => node.name)).to.deep.equal(['down-1', 'down-2']);
      // The rerun sent the kept payload again: the hostile note arrived literal once more.
      const argsNow = readdirSync(at).filter((name) => name.startsWith('args.'));
      expect(argsNow).to.have.length(8);
      for (const file of argsNow) expect(readFileSync(path.join(at, file), 'utf8')).to.equal(`nginx\n${HOSTILE}`);
      // Nothing left to rerun.
      const none = await call('POST', `${s.gateway.base}/runs/${rerunId}/rerun`, { token, body: { nodes: 'failed' } });
      expect(none.status).to.equal(409);
      expect(none.body.error.code).to.equal('not_rerunnable');
      expect(none.body.error.details).to.deep.equal({ reason: 'no_failed_nodes' });
    });

    it('cancels a fleet run from the other instance: its running nodes end cancelled', async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'slow/x', { note: 'n' });
      const id = reply.body.data.run_id as string;
      await eventually('every node runs', async () => {
        const run = (await call('GET', `${other.base}/runs/${id}`, { token })).body.data;
        return run.node_counts?.pending === 0 && run.node_counts.running >= 6 ? run : undefined;
      });
      // Every running node's command has started (its first line is out): the cancel is the command's, not its login's.
      await eventually('the commands started', async () => {
        const text = (await call('GET', `${other.base}/runs/${id}/output`, { token })).body as string;
        return (text.match(/: started$/gm) ?? []).length >= 6 ? text : undefined;
      });
      const cancel = await call('POST', `${other.base}/runs/${id}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      const run = await ended(other.base, id, token);
      expect(run).to.include({ status: 'cancelled', reason: 'cancelled_by' });
      const web = (run.nodes as Array<{ name: string; status: string; reason: string }>).filter((node) => node.name.startsWith('web-'));
      for (const node of web) expect(node).to.include({ status: 'cancelled', reason: 'cancelled_by' });
      // A rerun of all of them, from the other instance, is a new run of the same nodes.
      const again = await call('POST', `${other.base}/runs/${id}/rerun`, { token, body: { nodes: 'all' } });
      expect(again.status).to.equal(202);
      const rerunId = again.body.data.run_id as string;
      const rerun = (await call('GET', `${s.gateway.base}/runs/${rerunId}`, { token })).body.data;
      expect(rerun).to.include({ rerun_of: id, node_count: 8 });
      await call('POST', `${s.gateway.base}/runs/${rerunId}/cancel`, { token });
      await ended(s.gateway.base, rerunId, token);
    });

    it("masks the gateway's secret values in a node's output", async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'say/x', { note: 'fleet-secret-value-4711' });
      const id = reply.body.data.run_id as string;
      expect(await ended(s.gateway.base, id, token)).to.include({ status: 'succeeded' });
      const text = await call('GET', `${other.base}/runs/${id}/output`, { token });
      expect(text.body).to.include('db-1: said: ***\n');
      expect(text.body).not.to.include('4711');
    });

    it("keeps a secret field nowhere, a rerun's replay included: the rerun is 400 naming it until it is sent again", async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'token/x', { note: 'one-time-7781' });
      const id = reply.body.data.run_id as string;
      expect(await ended(s.gateway.base, id, token)).to.include({ status: 'succeeded' });
      const stored = await s.bed.db('runs').where({ id }).first('payload', 'replay');
      expect(JSON.stringify(stored)).not.to.include('one-time-7781');
      const without = await call('POST', `${other.base}/runs/${id}/rerun`, { token, body: { nodes: 'all' } });
      expect(without.status).to.equal(400);
      expect(without.body.error.code).to.equal('invalid_payload');
      expect(JSON.stringify(without.body.error.details)).to.include('note');
      const again = await call('POST', `${other.base}/runs/${id}/rerun`, { token, body: { nodes: 'all', payload: { note: 'one-time-7782' } } });
      expect(again.status).to.equal(202);
      expect(await ended(s.gateway.base, again.body.data.run_id as string, token)).to.include({ status: 'succeeded', rerun_of: id });
      const written = readdirSync(marks('token'))
        .filter((file) => file.startsWith('token-'))
        .map((file) => readFileSync(path.join(marks('token'), file), 'utf8').trim());
      expect(written.sort()).to.deep.equal(['token one-time-7781', 'token one-time-7782']);
    });

    it('shows approvers the node selection, runs once approved, and asks again for a rerun', async () => {
      const token = await s.login('ann');
      const vic = await s.login('vic');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'approved/pg', { note: 'n' });
      expect(reply.body.data.status).to.equal('awaiting_approval');
      const id = reply.body.data.run_id as string;
      const pending = (await call('GET', `${other.base}/runs/${id}`, { token: vic })).body.data;
      expect(pending.nodes.map((node: { name: string; status: string }) => [node.name, node.status])).to.deep.equal([['db-1', 'pending']]);
      expect((await call('POST', `${other.base}/runs/${id}/approve`, { token: vic, body: {} })).status).to.equal(200);
      const run = await ended(s.gateway.base, id, token);
      expect(run).to.include({ status: 'succeeded' });
      const again = await call('POST', `${s.gateway.base}/runs/${id}/rerun`, { token, body: { nodes: 'all' } });
      expect(again.status).to.equal(202);
      expect(again.body.data.status).to.equal('awaiting_approval');
      await call('POST', `${s.gateway.base}/runs/${again.body.data.run_id}/cancel`, { token });
    });

    it('answers every bad input with its 4xx naming the field', async () => {
      const token = await s.login('ann');
      const client = toolkitClient(s.gateway.base, token);
      const none = await client.post('fleet', 'nowhere/x', { note: 'n' });
      expect(none.status).to.equal(400);
      expect(none.body.error.code).to.equal('no_nodes');
      const many = await client.post('fleet', 'few/x', { note: 'n' });
      expect(many.status).to.equal(400);
      expect(many.body.error.code).to.equal('too_many_nodes');
      expect(many.body.error.details).to.include({ count: 8, max: 2 });
      const missing = await client.post('fleet', 'restart/x', {});
      expect(missing.status).to.equal(400);
      expect(missing.body.error.details.map((problem: { field: string }) => problem.field)).to.include('note');

      const reply = await client.post('fleet', 'restart/x', { note: 'n' });
      const id = reply.body.data.run_id as string;
      const expectField = async (method: string, url: string, field: string, body?: unknown) => {
        const answer = await call(method, url, { token, ...(body !== undefined ? { body } : {}) });
        expect(answer.status, url).to.equal(400);
        expect(answer.body.error.details.map((problem: { field: string }) => problem.field)).to.include(field);
      };
      await expectField('GET', `${s.gateway.base}/runs/${id}/nodes?status=bogus`, 'status');
      await expectField('GET', `${s.gateway.base}/runs/${id}/nodes?limit=0`, 'limit');
      await expectField('GET', `${s.gateway.base}/runs/${id}/nodes?cursor=${Buffer.from('a/b').toString('base64url')}`, 'cursor');
      await expectField('GET', `${s.gateway.base}/runs/${id}/output?node=a%2Fb`, 'node');
      await ended(s.gateway.base, id, token);
      await expectField('POST', `${s.gateway.base}/runs/${id}/rerun`, 'nodes', { nodes: 'some' });
      await expectField('POST', `${s.gateway.base}/runs/${id}/rerun`, 'payload', { nodes: 'all', payload: [1] });
      // fleet/nodes: below fleet.view_power 403 forbidden; never key material.
      const denied = await call('GET', `${s.gateway.base}/fleet/nodes`, { token });
      expect(denied.status).to.equal(403);
      expect(denied.body.error.code).to.equal('forbidden');
      const listed = await call('GET', `${s.gateway.base}/fleet/nodes?label.role=db`, { token: await s.login('vic') });
      expect(listed.body.data.nodes).to.have.length(1);
      expect(listed.body.data.nodes[0]).to.include({ name: 'db-1', host_keys_from: 'node', source: inventoryFile });
      expect(JSON.stringify(listed.body.data)).not.to.include('AAAA');
      // tkgate fleet nodes reads the sources itself, and lists what the route lists.
      if (dialect === dialects[0]) {
        const cli = await runCli(['fleet', 'nodes', '--label', 'role=db', '--json', '--config', writeConfig({ ...fleetConfig(), db: s.bed.dbConfig })]);
        expect(cli.code, cli.stderr).to.equal(0);
        expect(
          cli.stdout
            .trim()
            .split('\n')
            .map((text) => JSON.parse(text)),
        ).to.deep.equal(listed.body.data.nodes);
        const bad = await runCli(['fleet', 'nodes', '--label', 'role', '--config', writeConfig({ ...fleetConfig(), db: s.bed.dbConfig })]);
        expect(bad.code).to.equal(2);
        expect(bad.stderr).to.include('--label role: give it as key=value');
      }
    });
  });
}
