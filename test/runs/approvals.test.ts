import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { scrape, valueOf } from '../support/ops.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { apiKeyOf, call, loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { saveByRename, toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-approvals-bin-');
const marks = tempDir('tkgate-approvals-marks-');
/** One line per start of a run, in a file of the run's own: exactly one line means it ran exactly once. */
const marker = script('marker', 'echo "$PPID" >> "$MARKS/$TKGATE_RUN_ID"');
/** The dry run: prints the secret it was given (masked in what approvers see) and the payload. */
const dry = script('dry', 'echo "token=$TOKEN"; echo "context=$1"');
const SECRET = 'approval-secret-4f9c2e';

const approved = (pathName: string, approval: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method: 'POST',
  type: 'exec',
  run: 'async',
  command: [marker],
  env: { MARKS: marks },
  approval: { approvers: { min_power: 50, group: 'ops' }, ...approval },
  ...extra,
});
const endpoints = (editedDescription: string) => [
  approved('deploy', {}),
  approved('deploy2', { quorum: 2 }),
  approved('self', { approvers: { min_power: 10 }, allow_self: true }),
  approved('short', { expires: '2s' }),
  approved('edited', {}, { description: editedDescription }),
  approved('dry', { dry_run: [dry] }, { env: { MARKS: marks, TOKEN: { secret: 'env:APPROVAL_TEST_TOKEN' } } }),
];

const ENDED = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'rejected', 'expired'];
const lines = (id: string) => (existsSync(path.join(marks, id)) ? readFileSync(path.join(marks, id), 'utf8').trim().split('\n') : []);

/** Approvals (docs/runs.md, "Approvals") on two real tkgate processes on one database, people signed in with sessions. */
for (const dialect of dialects) {
  describe(`approvals: four eyes before a command runs (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withDatabase(dialect, [
      { username: 'ann', power: 10 },
      { username: 'bob', power: 10 },
      { username: 'vic', power: 50, group: 'ops' },
      { username: 'wes', power: 60, group: 'ops' },
      { username: 'pam', power: 50 },
      { username: 'root', power: 100 },
    ]);
    // The suite's own toolkit directory: its last test edits it.
    const toolkits = toolkitDir({ 'ops.yaml': { name: 'ops', type: 'app', endpoints: endpoints('first') } });
    const gateways: GatewayProcess[] = [];
    let a: GatewayProcess;
    let b: GatewayProcess;
    const tokens: Record<string, string> = {};
    const start = async () => {
      const options = {
        config: { db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: true }, runs: { heartbeat: '300ms' } },
        env: { APPROVAL_TEST_TOKEN: SECRET },
      };
      // A second chance: on a loaded machine a start can pass the helper's 15 s deadline.
      const gateway = await startGateway(options).catch(() => startGateway(options));
      gateways.push(gateway);
      return gateway;
    };
    const ask = async (endpoint: string, as = 'ann', on = a, body: Record<string, unknown> = {}) => {
      const reply = await toolkitClient(on.base, tokens[as]).post('ops', endpoint, body);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
      expect(reply.body.data.status).to.equal('awaiting_approval');
      return reply.body.data.run_id as string;
    };
    const runOf = async (id: string, as = 'ann', on = a) => (await call('GET', `${on.base}/runs/${id}`, { token: tokens[as] })).body.data;
    const decide = (decision: 'approve' | 'reject', id: string, as: string, on = a, body: Record<string, unknown> = {}) =>
      call('POST', `${on.base}/runs/${id}/${decision}`, { token: tokens[as], body });
    const ended = (id: string, on = a) =>
      eventually(
        `run ${id} ends`,
        async () => {
          const run = await runOf(id, 'root', on);
          return ENDED.includes(run.status) ? run : undefined;
        },
        60_000,
      );
    const auditActions = async (id: string) =>
      (await s.bed.db('audit_events').where('details', 'like', `%${id}%`).orderBy('id').select('action', 'actor', 'details')) as Array<{
        action: string;
        actor: string;
        details: string;
      }>;

    before(async () => {
      // One after the other: two starts at once on a loaded machine may pass the start deadline.
      a = await start();
      b = await start();
      for (const user of ['ann', 'bob', 'vic', 'wes', 'pam', 'root']) tokens[user] = await loginToken(a.base, user, passwordOf(user));
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-4000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('waits for approval, then runs exactly once when approved on the other instance; the decision and the request are in the audit trail', async () => {
      const id = await ask('deploy');
      const pending = await runOf(id);
      expect(pending).to.include({ status: 'awaiting_approval', dry_run: null });
      expect(pending.approvals).to.deep.equal([]);
      expect(pending.approval).to.deep.include({ quorum: 1, allow_self: false, approvers: { min_power: 50, group: 'ops' } });
      const reply = await decide('approve', id, 'vic', b, { comment: 'looks right' });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.data.id).to.equal(id);
      expect(reply.body.data.approvals).to.have.length(1);
      expect(reply.body.data.approvals[0]).to.include({ username: 'vic', decision: 'approve', comment: 'looks right' });
      expect(await ended(id)).to.include({ status: 'succeeded' });
      expect(lines(id)).to.have.length(1);
      const actions = await eventually('the audit rows', async () => {
        const rows = await auditActions(id);
        return rows.some((row) => row.action === 'run_end') ? rows.map((row) => row.action) : undefined;
      });
      expect(actions).to.include.members(['call', 'run_request', 'run_approve', 'run_end']);
    });

    for (const quorum of [1, 2]) {
      it(`starts a run exactly once when two approvers approve at the same moment on two instances (quorum ${quorum})`, async () => {
        const id = await ask(quorum === 1 ? 'deploy' : 'deploy2');
        const replies = await Promise.all([decide('approve', id, 'vic', a), decide('approve', id, 'wes', b)]);
        const statuses = replies.map((reply) => reply.status).sort();
        if (quorum === 2) expect(statuses).to.deep.equal([200, 200]);
        else {
          expect(statuses).to.deep.equal([200, 409]);
          expect(replies.find((reply) => reply.status === 409)!.body.error.code).to.equal('run_not_pending');
        }
        const run = await ended(id, b);
        expect(run.status).to.equal('succeeded');
        expect(run.approvals.map((decision: { username: string }) => decision.username).sort()).to.deep.equal(
          quorum === 2 ? ['vic', 'wes'] : [replies[0]!.status === 200 ? 'vic' : 'wes'],
        );
        // Both instances had time to start it again, were it possible: one line.
        await eventually(
          'another tick on both instances',
          async () => (await runOf(id, 'ann', a)).status === 'succeeded' && (await runOf(id, 'ann', b)).status === 'succeeded',
        );
        expect(lines(id)).to.have.length(1);
      });
    }

    it('refuses every decision it must, through HTTP, and leaves the run unchanged', async () => {
      const id = await ask('deploy2');
      const before = await runOf(id);
      const refused = async (as: string, expected: number, code: string, decision: 'approve' | 'reject' = 'approve', body: Record<string, unknown> = {}) => {
        const reply = await decide(decision, id, as, a, body);
        expect(reply.status, `${as} ${decision}: ${JSON.stringify(reply.body)}`).to.equal(expected);
        expect(reply.body.error.code).to.equal(code);
        return reply;
      };
      // Cannot see it (not its caller, no view_power, not an approver: pam has the power but not the group).
      await refused('bob', 404, 'run_not_found');
      await refused('pam', 404, 'run_not_found', 'reject', { comment: 'no' });
      // Sees it (admin power), is not an approver; the caller is not an approver of their own run.
      await refused('root', 403, 'forbidden');
      await refused('ann', 403, 'forbidden');
      // An API key of an approver cannot approve.
      const key = await apiKeyOf(a.base, tokens.vic!, { name: 'approver-key', toolkits: ['ops'] });
      const byKey = await call('POST', `${a.base}/runs/${id}/approve`, { token: key.key, body: {} });
      expect(byKey.status).to.equal(403);
      expect(byKey.body.error.code).to.equal('forbidden');
      // A reject needs a comment of at most 1000 characters.
      expect((await refused('vic', 400, 'invalid_payload', 'reject')).body.error.details[0].field).to.equal('comment');
      await refused('vic', 400, 'invalid_payload', 'reject', { comment: 'x'.repeat(1001) });
      await refused('vic', 400, 'invalid_payload', 'approve', { comment: 42 });
      expect(await runOf(id)).to.deep.equal(before);
      // The same approver twice.
      expect((await decide('approve', id, 'vic', a)).status).to.equal(200);
      const afterOne = await runOf(id);
      expect(afterOne.status).to.equal('awaiting_approval');
      await refused('vic', 409, 'already_decided');
      const again = await call('POST', `${b.base}/runs/${id}/reject`, { token: tokens.vic, body: { comment: 'changed my mind' } });
      expect(again.status).to.equal(409);
      expect(again.body.error.code).to.equal('already_decided');
      expect(await runOf(id)).to.deep.equal(afterOne);
      // An approver's own run, without allow_self.
      const own = await ask('deploy', 'vic');
      const ownReply = await decide('approve', own, 'vic');
      expect(ownReply.status).to.equal(403);
      expect(ownReply.body.error.code).to.equal('forbidden');
      // One reject ends it; nothing is pending any more.
      const rejected = await decide('reject', id, 'wes', b, { comment: 'not today' });
      expect(rejected.status).to.equal(200);
      expect(rejected.body.data.status).to.equal('rejected');
      expect(rejected.body.data.approvals.map((decision: { decision: string }) => decision.decision)).to.deep.equal(['approve', 'reject']);
      expect(rejected.body.data.approvals[1]).to.include({ username: 'wes', comment: 'not today' });
      expect((await decide('approve', id, 'root')).status).to.equal(403);
      const ended409 = await decide('approve', id, 'vic', b);
      expect(ended409.status).to.equal(409);
      expect(ended409.body.error.code).to.equal('run_not_pending');
      // Another approver decides vic's own run; once it has started, there is nothing to decide.
      expect((await decide('approve', own, 'wes', b)).status).to.equal(200);
      expect(await ended(own)).to.include({ status: 'succeeded' });
      const afterStart = await decide('approve', own, 'root');
      expect(afterStart.status).to.equal(403);
      const started = await decide('reject', own, 'wes', a, { comment: 'too late' });
      expect(started.status).to.equal(409);
      expect(started.body.error.code).to.equal('run_not_pending');
      expect(lines(own)).to.have.length(1);
      expect(lines(id)).to.deep.equal([]);
      expect((await auditActions(id)).map((row) => row.action)).to.include.members(['run_request', 'run_approve', 'run_reject']);
    });

    it('answers run_not_pending for a run that is no longer awaiting approval', async () => {
      const id = await ask('deploy2');
      expect((await decide('reject', id, 'vic', a, { comment: 'no' })).status).to.equal(200);
      const reply = await decide('approve', id, 'wes', b);
      expect(reply.status).to.equal(409);
      expect(reply.body.error.code).to.equal('run_not_pending');
      expect((await runOf(id)).status).to.equal('rejected');
    });

    it('lists the runs the caller may decide (approvable=true), and shows an approver the runs of their endpoints', async () => {
      const id = await ask('deploy2');
      const approvable = async (as: string) =>
        (await call('GET', `${a.base}/runs?status=awaiting_approval&approvable=true`, { token: tokens[as] })).body.data.runs.map(
          (run: { id: string }) => run.id,
        );
      expect(await approvable('vic')).to.include(id);
      expect(await approvable('wes')).to.include(id);
      expect(await approvable('root')).not.to.include(id);
      expect(await approvable('ann')).not.to.include(id);
      expect(await approvable('pam')).not.to.include(id);
      // vic sees it in the plain list too (an approver of its endpoint), pam does not.
      const seen = async (as: string) =>
        (await call('GET', `${b.base}/runs?endpoint=deploy2`, { token: tokens[as] })).body.data.runs.map((run: { id: string }) => run.id);
      expect(await seen('vic')).to.include(id);
      expect(await seen('pam')).not.to.include(id);
      // tkgate_runs_awaiting_approval counts it, on either instance (the database's figure).
      expect(valueOf((await scrape(b)).samples, 'tkgate_runs_awaiting_approval')).to.be.at.least(1);
      expect((await decide('approve', id, 'vic', b)).status).to.equal(200);
      expect(await approvable('vic')).not.to.include(id);
      expect(await approvable('wes')).to.include(id);
      const bad = await call('GET', `${a.base}/runs?approvable=maybe`, { token: tokens.vic });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.details[0].field).to.equal('approvable');
      await call('POST', `${a.base}/runs/${id}/cancel`, { token: tokens.ann });
    });

    it('lets the caller approve their own run with allow_self', async () => {
      const id = await ask('self');
      const reply = await decide('approve', id, 'ann');
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(await ended(id)).to.include({ status: 'succeeded' });
      expect(lines(id)).to.have.length(1);
    });

    it('ends a run not approved within expires expired (approval_expired): it never runs', async () => {
      const id = await ask('short');
      const run = await ended(id);
      expect(run).to.include({ status: 'expired', reason: 'approval_expired' });
      const reply = await decide('approve', id, 'vic', b);
      expect(reply.status).to.equal(409);
      expect(reply.body.error.code).to.equal('run_not_pending');
      expect(lines(id)).to.deep.equal([]);
      await eventually('run_expire is recorded', async () => (await auditActions(id)).some((row) => row.action === 'run_expire'));
    });

    it("shows approvers the dry run's output at once, the secret it printed masked", async () => {
      const id = await ask('dry', 'ann', b, { service: 'api' });
      const shown = await eventually('the dry run ends', async () => {
        const run = await runOf(id, 'vic');
        return run.dry_run?.status === 'succeeded' ? run.dry_run : undefined;
      });
      expect(shown.exit_code).to.equal(0);
      expect(shown.output).to.include('token=***').and.include('"service":"api"').and.not.include(SECRET);
      expect((await runOf(id)).status).to.equal('awaiting_approval');
      expect(lines(id)).to.deep.equal([]);
      await call('POST', `${a.base}/runs/${id}/cancel`, { token: tokens.ann });
    });

    /** `tkgate runs ...` with the gateways' configuration (their database and toolkits.dir), or another toolkits.dir. */
    const cliWith =
      (dir: string) =>
      (...args: string[]) =>
        runCli(['runs', ...args, '--config', writeConfig({ db: s.bed.dbConfig, toolkits: { dir } })], { env: { APPROVAL_TEST_TOKEN: SECRET } });

    it('approves and rejects from the CLI as the operator (actor cli)', async () => {
      const cli = cliWith(toolkits);
      const first = await ask('deploy');
      const approvedByCli = await cli('approve', first, '--comment', 'operator says go');
      expect(approvedByCli.code, approvedByCli.stderr).to.equal(0);
      expect(await ended(first)).to.include({ status: 'succeeded' });
      expect((await runOf(first)).approvals[0]).to.include({ username: 'cli', decision: 'approve', comment: 'operator says go' });
      expect(lines(first)).to.have.length(1);
      const second = await ask('deploy');
      const noComment = await cli('reject', second);
      expect(noComment.code).not.to.equal(0);
      expect(noComment.stderr).to.include('--comment');
      const rejected = await cli('reject', second, '--comment', 'not now');
      expect(rejected.code, rejected.stderr).to.equal(0);
      expect(await runOf(second)).to.include({ status: 'rejected' });
      const late = await cli('approve', second);
      expect(late.code).not.to.equal(0);
      expect(late.stderr).to.include('not awaiting approval');
      const rows = await auditActions(second);
      expect(rows.find((row) => row.action === 'run_reject')).to.include({ actor: 'cli' });
      expect(lines(second)).to.deep.equal([]);
    });

    it('refuses a CLI approval of a run whose endpoint definition is not the one it was asked for, as the route does', async () => {
      // The CLI reads toolkits.dir as the gateway does: here a directory where the endpoint's definition differs.
      const elsewhere = toolkitDir({ 'ops.yaml': { name: 'ops', type: 'app', endpoints: endpoints('changed for the CLI') } });
      const id = await ask('edited');
      const refused = await cliWith(elsewhere)('approve', id, '--comment', 'go');
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.include('not awaiting approval (expired)');
      expect(await runOf(id)).to.include({ status: 'expired', reason: 'definition_changed' });
      expect((await runOf(id)).approvals).to.deep.equal([]);
      await eventually('run_expire is recorded', async () => (await auditActions(id)).some((row) => row.action === 'run_expire'));
      expect(lines(id)).to.deep.equal([]);
    });

    // Last: it rewrites the toolkit file.
    it('ends a pending run expired (definition_changed) when its endpoint is edited, on every instance: it never runs', async () => {
      const id = await ask('edited');
      const other = await ask('deploy2');
      // As editors save: a new file renamed over the old one (never read half written).
      saveByRename(toolkits, 'ops.yaml', { name: 'ops', type: 'app', endpoints: endpoints('second') });
      const run = await ended(id, b);
      expect(run).to.include({ status: 'expired', reason: 'definition_changed' });
      const reply = await decide('approve', id, 'vic');
      expect(reply.status).to.equal(409);
      expect(reply.body.error.code).to.equal('run_not_pending');
      expect(lines(id)).to.deep.equal([]);
      // An endpoint that did not change keeps its pending runs.
      expect((await runOf(other)).status).to.equal('awaiting_approval');
      await call('POST', `${a.base}/runs/${other}/cancel`, { token: tokens.ann });
    });
  });
}

describe(`approvals: configuration problems (${dialects[0]!.name})`, function () {
  this.timeout(60_000);
  const s = withDatabase(dialects[0]!, []);
  /** One `tkgate config check` of a toolkit with these endpoints (paths e0, e1, ...): every problem at once. */
  const check = async (endpoints: Array<Record<string, unknown>>) => {
    const config = writeConfig({ db: s.bed.dbConfig });
    const tools = { name: 'tools', type: 'app', endpoints: endpoints.map((endpoint, i) => ({ path: `e${i}`, method: 'POST', ...endpoint })) };
    const result = await runCli(['config', 'check', toolkitDir({ 'tools.yaml': tools }), '--config', config]);
    return { code: result.code, text: result.stdout + result.stderr };
  };
  const ok = { approvers: { min_power: 50 } };
  const async = { type: 'exec', run: 'async', command: ['/bin/true'] };

  it('refuses approval on a sync exec endpoint and on another type, a bad quorum, approvers naming nobody, an unknown key and a bad expires, naming each key path', async () => {
    const result = await check([
      { type: 'exec', command: ['/bin/true'], approval: ok },
      { type: 'internal', handler: 'echo', approval: ok },
      { ...async, approval: { ...ok, quorum: 0 } },
      { ...async, approval: { ...ok, quorum: 'two' } },
      { ...async, approval: { approvers: {} } },
      { ...async, approval: { ...ok, expires: 'soon' } },
      { ...async, approval: { ...ok, alow_self: true } },
    ]);
    expect(result.code).not.to.equal(0);
    expect(result.text).to.include('endpoints.0.approval').and.include('run: async');
    for (const where of [
      'endpoints.1.approval',
      'endpoints.2.approval.quorum',
      'endpoints.3.approval.quorum',
      'endpoints.4.approval.approvers',
      'endpoints.5.approval.expires',
      'endpoints.6.approval',
    ])
      expect(result.text, where).to.include(where);
    expect(result.text).to.include('alow_self');
  });

  it('accepts a full approval', async () => {
    const good = await check([
      { ...async, approval: { approvers: { min_power: 50, group: 'ops' }, quorum: 2, expires: '30m', allow_self: true, dry_run: ['/bin/true'] } },
    ]);
    expect(good.code, good.text).to.equal(0);
  });
});
