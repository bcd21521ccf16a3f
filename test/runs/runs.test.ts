import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { alive, scriptWriter } from '../support/executables.js';
import { writeConfig } from '../support/gateway-process.js';
import { apiKeyOf, call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { SseFollower } from '../support/sse-client.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-runs-bin-');
/** Prints a line, waits until the test says go (a file appears), prints more to stdout and stderr, exits 0. */
const waits = script('waits', 'echo "first line"; while [ ! -e "$GO_DIR/$TKGATE_RUN_ID" ]; do sleep 0.05; done; echo "to stderr" >&2; echo "last line"');
/** 20,000 numbered lines in 200 bursts: still printing when a client drops. */
const fast = script('fast', 'i=0; while [ $i -lt 200 ]; do seq $((i*100+1)) $((i*100+100)); i=$((i+1)); sleep 0.01; done');
/** Ignores SIGTERM and leaves a child behind in its group: only SIGKILL ends them. */
const stubborn = script('stubborn', 'trap "" TERM; sleep 300 & echo $! > "$PID_DIR/$TKGATE_RUN_ID"; echo started; while :; do sleep 0.1; done');
const jsonOut = script('json-out', 'printf \'{"deployed":true}\'');
const chatty = script('chatty', 'head -c 3000 /dev/zero | tr "\\000" a; exit 0');
const exits3 = script('exits-3', 'echo oops >&2; exit 3');
/** A NUL byte and bytes that are not UTF-8, on stdout and stderr. */
const binary = script('binary', "printf 'nul:\\000:end\\n'; printf 'bad:\\377\\376:\\000\\n' >&2");
const sleeper = script('sleeper', 'sleep 30');
const goDir = tempDir('tkgate-runs-go-');
const pidDir = tempDir('tkgate-runs-pids-');

const async = (pathName: string, command: unknown, extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method: ['GET', 'POST'],
  type: 'exec',
  run: 'async',
  command,
  ...extra,
});
const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    async('waits', [waits], { env: { GO_DIR: goDir }, audit_fields: ['service'] }),
    async('fast', [fast]),
    async('stubborn', [stubborn], { env: { PID_DIR: pidDir } }),
    async('deploy', [jsonOut]),
    async('chatty', [chatty], { max_output_bytes: 1000 }),
    async('exits', [exits3]),
    async('binary', [binary]),
    async('slow', [sleeper], { timeout: '1s' }),
    async('single', [sleeper], { max_concurrency: 1, max_queued: 2 }),
    async('watched', [jsonOut], { runs: { view_power: 50, cancel_power: 60 } }),
    async('held', [sleeper], { max_concurrency: 1, max_queued: 500 }),
    async('release/{service}', [waits], { env: { GO_DIR: goDir }, concurrency_key: '$path.service' }),
    async('keyed', [waits], { env: { GO_DIR: goDir }, concurrency_key: '$payload.service' }),
  ],
};

const go = (runId: string) => writeFileSync(path.join(goDir, runId), '');

for (const dialect of dialects) {
  describe(`runs: commands as jobs (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(
      dialect,
      [
        { username: 'ann', power: 10 },
        { username: 'bob', power: 10 },
        { username: 'vic', power: 50 },
        { username: 'root', power: 100 },
      ],
      { runs: { cancel_grace: '1s', drain_timeout: '1s' } },
      { toolkitsDir: toolkitDir({ 'ops.yaml': ops }) },
    );
    const base = () => s.gateway.base;
    const ann = async () => toolkitClient(base(), await s.login('ann'));
    const runOf = async (id: string, token: string) => call('GET', `${base()}/runs/${id}`, { token });
    const ended = async (id: string, token: string) =>
      eventually(`run ${id} ends`, async () => {
        const reply = await runOf(id, token);
        return ['queued', 'running'].includes(reply.body.data.status) ? undefined : reply.body.data;
      });

    it('answers 202 at once with the run id, its links and Location; the run ends succeeded with the result a call would answer', async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(base(), token).post('ops', 'deploy', {});
      expect(reply.status).to.equal(202);
      const { run_id: id, status, links } = reply.body.data;
      expect(id).to.match(/^[0-9a-f]{32}$/);
      expect(status).to.equal('queued');
      expect(links).to.deep.equal({ self: `/api/runs/${id}`, output: `/api/runs/${id}/output`, cancel: `/api/runs/${id}/cancel` });
      expect(reply.headers.get('location')).to.equal(`/api/runs/${id}`);
      const run = await ended(id, token);
      expect(run).to.include({ id, toolkit: 'ops', endpoint: 'deploy', status: 'succeeded', exit_code: 0, reason: null, output_truncated: false });
      expect(run.result).to.deep.equal({ deployed: true });
      expect(run.actor).to.deep.equal({ user_id: s.ids.ann, username: 'ann', kind: 'session' });
      expect(run.approvals).to.deep.equal([]);
      for (const time of ['queued_at', 'started_at', 'ended_at']) expect(run[time]).to.match(/^\d{4}-\d\d-\d\dT/);
    });

    it('streams stdout and stderr live as numbered events, then end; the plain-text answer has the same output', async () => {
      const token = await s.login('ann');
      const reply = await toolkitClient(base(), token).post('ops', 'waits', { service: 'api', secret: 'not kept' });
      const id = reply.body.data.run_id;
      const follower = new SseFollower(`${base()}/runs/${id}/output`, { token });
      // The command waits for the test: the first line arrives while it runs.
      await eventually('the first line arrives live', () => follower.events.length >= 1);
      expect(follower.status).to.equal(200);
      expect(follower.contentType).to.match(/^text\/event-stream/);
      expect(follower.events[0]).to.deep.include({ event: 'stdout', id: '1', data: 'first line\n' });
      expect((await runOf(id, token)).body.data.status).to.equal('running');
      go(id);
      await follower.done;
      const [, second, third, end] = follower.events;
      const rest = [second, third].map((event) => ({ event: event!.event, id: event!.id, data: event!.data }));
      expect(rest).to.have.deep.members([
        { event: 'stderr', id: rest.find((each) => each.event === 'stderr')!.id, data: 'to stderr\n' },
        { event: 'stdout', id: rest.find((each) => each.event === 'stdout')!.id, data: 'last line\n' },
      ]);
      expect(rest.map((event) => event.id).sort()).to.deep.equal(['2', '3']);
      expect(end!.event).to.equal('end');
      expect(JSON.parse(end!.data)).to.deep.equal({ status: 'succeeded', exit_code: 0 });
      const text = await call('GET', `${base()}/runs/${id}/output`, { token });
      expect(text.headers.get('content-type')).to.match(/^text\/plain/);
      expect(text.body).to.equal(follower.text());
      const run = (await runOf(id, token)).body.data;
      expect(run.payload).to.deep.equal({ service: 'api' });
      expect(run.output_bytes).to.equal(Buffer.byteLength('first line\nto stderr\nlast line\n'));
    });

    it('keeps output holding NUL bytes whole on every database (PostgreSQL text refuses NUL: it was dropped), through the text form, the SSE stream and the result', async () => {
      const token = await s.login('ann');
      const id = (await toolkitClient(base(), token).post('ops', 'binary', {})).body.data.run_id;
      const run = await ended(id, token);
      // Bytes that are not UTF-8 are U+FFFD in the text (docs/runs.md); a NUL is itself.
      const stdout = 'nul:\u0000:end\n';
      const stderr = 'bad:\ufffd\ufffd:\u0000\n';
      expect(run).to.include({ status: 'succeeded', output_bytes: Buffer.byteLength(stdout + stderr), output_truncated: false });
      expect(run.result).to.deep.equal({ output: stdout });
      const text = await call('GET', `${base()}/runs/${id}/output`, { token });
      expect(text.status).to.equal(200);
      expect([stdout + stderr, stderr + stdout]).to.include(text.body);
      const follower = new SseFollower(`${base()}/runs/${id}/output`, { token });
      await follower.done;
      const events = follower.events.map(({ event, data }) => ({ event, data }));
      expect(events).to.have.deep.members([
        { event: 'stdout', data: stdout },
        { event: 'stderr', data: stderr },
        { event: 'end', data: JSON.stringify({ status: 'succeeded', exit_code: 0 }) },
      ]);
      expect(follower.text()).to.equal(text.body);
    });

    it('resumes after a dropped connection from Last-Event-ID (and ?after=): nothing lost or repeated, byte for byte', async () => {
      const token = await s.login('ann');
      const id = (await toolkitClient(base(), token).post('ops', 'fast', {})).body.data.run_id;
      const first = new SseFollower(`${base()}/runs/${id}/output`, { token });
      await eventually('a few chunks arrive', () => first.events.length >= 3);
      first.close();
      await first.done;
      const lastId = first.events.at(-1)!.id!;
      const second = new SseFollower(`${base()}/runs/${id}/output`, { token, lastEventId: lastId });
      await second.done;
      expect(second.events.at(-1)!.event).to.equal('end');
      expect(Number(second.events[0]!.id)).to.equal(Number(lastId) + 1);
      const expected = execFileSync('seq', ['1', '20000'], { encoding: 'utf8' });
      expect(first.text() + second.text()).to.equal(expected);
      const after = new SseFollower(`${base()}/runs/${id}/output?after=${lastId}`, { token });
      await after.done;
      expect(after.text()).to.equal(second.text());
    });

    it('cancels a running command that ignores SIGTERM: SIGKILL to its group after runs.cancel_grace, ended cancelled; a second cancel is 409 run_ended', async () => {
      const token = await s.login('ann');
      const id = (await toolkitClient(base(), token).post('ops', 'stubborn', {})).body.data.run_id;
      const pidFile = path.join(pidDir, id);
      await eventually('the command runs', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
      const child = Number(readFileSync(pidFile, 'utf8'));
      const cancel = await call('POST', `${base()}/runs/${id}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      const run = await ended(id, token);
      expect(run).to.include({ status: 'cancelled', reason: 'cancelled_by', cancelled_by: 'ann' });
      await eventually('the child is gone', () => !alive(child));
      const again = await call('POST', `${base()}/runs/${id}/cancel`, { token });
      expect(again.status).to.equal(409);
      expect(again.body.error.code).to.equal('run_ended');
    });

    it('queues past max_concurrency, cancels a queued run at once, and answers 503 busy past max_queued', async () => {
      const client = await ann();
      const token = await s.login('ann');
      const running = (await client.post('ops', 'single', {})).body.data.run_id;
      await eventually('the first runs', async () => (await runOf(running, token)).body.data.status === 'running');
      const queued = [(await client.post('ops', 'single', {})).body.data.run_id, (await client.post('ops', 'single', {})).body.data.run_id];
      const full = await client.post('ops', 'single', {});
      expect(full.status).to.equal(503);
      expect(full.body.error.code).to.equal('busy');
      expect(full.headers.get('retry-after')).to.match(/^\d+$/);
      expect((await runOf(queued[0], token)).body.data.status).to.equal('queued');
      const cancel = await call('POST', `${base()}/runs/${queued[0]}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      expect(cancel.body.data).to.include({ status: 'cancelled', reason: 'cancelled_by' });
      for (const id of [running, queued[1]]) expect((await call('POST', `${base()}/runs/${id}/cancel`, { token })).status).to.equal(202);
      await ended(queued[1], token);
    });

    it('starts a run of one endpoint while another endpoint has more than a hundred runs waiting', async () => {
      const client = await ann();
      const token = await s.login('ann');
      const first = (await client.post('ops', 'held', {})).body.data.run_id;
      await eventually('the held endpoint runs', async () => (await runOf(first, token)).body.data.status === 'running');
      for (let i = 0; i < 101; i++) expect((await client.post('ops', 'held', {})).status).to.equal(202);
      const id = (await client.post('ops', 'deploy', {})).body.data.run_id;
      expect(await ended(id, token)).to.include({ status: 'succeeded' });
    });

    it('ends timed_out (reason timeout), failed with the exit code, and truncated past max_output_bytes while the command goes on', async () => {
      const client = await ann();
      const token = await s.login('ann');
      const slow = (await client.post('ops', 'slow', {})).body.data.run_id;
      const exits = (await client.post('ops', 'exits', {})).body.data.run_id;
      const chatty = (await client.post('ops', 'chatty', {})).body.data.run_id;
      expect(await ended(slow, token)).to.include({ status: 'timed_out', reason: 'timeout' });
      expect(await ended(exits, token)).to.include({ status: 'failed', exit_code: 3, result: null });
      expect((await call('GET', `${base()}/runs/${exits}/output`, { token })).body).to.equal('oops\n');
      expect(await ended(chatty, token)).to.include({ status: 'succeeded', output_bytes: 1000, output_truncated: true });
      expect((await call('GET', `${base()}/runs/${chatty}/output`, { token })).body).to.equal('a'.repeat(1000));
    });

    it('runs one run at a time per value of a concurrency_key from the path ($path.service), others alongside', async () => {
      const token = await s.login('ann');
      const client = toolkitClient(base(), token);
      const submit = async (service: string) => (await client.post('ops', `release/${service}`, {})).body.data.run_id as string;
      const [api, apiAgain, web] = [await submit('api'), await submit('api'), await submit('web')];
      const statusOf = async (id: string) => (await runOf(id, token)).body.data.status as string;
      await eventually('the first api run and the web run running', async () => (await statusOf(api)) === 'running' && (await statusOf(web)) === 'running');
      expect(await statusOf(apiAgain)).to.equal('queued');
      go(api);
      await eventually('the second api run running once the first ended', async () => (await statusOf(apiAgain)) === 'running');
      go(apiAgain);
      go(web);
      for (const id of [api, apiAgain, web]) expect((await ended(id, token)).status).to.equal('succeeded');
    });

    it('keys a concurrency_key by its text form (1 and "1" are one key) and refuses objects and arrays with 400 naming the field', async () => {
      const token = await s.login('ann');
      const client = toolkitClient(base(), token);
      const statusOf = async (id: string) => (await runOf(id, token)).body.data.status as string;
      const number = (await client.post('ops', 'keyed', { service: 1 })).body.data.run_id as string;
      await eventually('the run keyed 1 runs', async () => (await statusOf(number)) === 'running');
      const text = (await client.post('ops', 'keyed', { service: '1' })).body.data.run_id as string;
      const other = (await client.post('ops', 'keyed', { service: 2 })).body.data.run_id as string;
      await eventually('the run keyed 2 runs beside it', async () => (await statusOf(other)) === 'running');
      expect(await statusOf(text)).to.equal('queued');
      for (const service of [['1'], { name: '1' }]) {
        const refused = await client.post('ops', 'keyed', { service });
        expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
        expect(refused.body.error.code).to.equal('invalid_payload');
        expect(refused.body.error.details[0]).to.include({ field: 'service', rule: 'type' });
      }
      const listed = (await call('GET', `${base()}/runs?endpoint=keyed`, { token })).body.data.runs as Array<{ id: string }>;
      expect(listed.map((run) => run.id).sort()).to.deep.equal([number, text, other].sort());
      go(number);
      await eventually('the run keyed "1" runs once the one keyed 1 ended', async () => (await statusOf(text)) === 'running');
      go(text);
      go(other);
      for (const id of [number, text, other]) expect((await ended(id, token)).status).to.equal('succeeded');
    });

    it('shows a run to its caller, runs.view_power and admins only: 404 run_not_found for anyone else, as for an unknown id', async () => {
      const annToken = await s.login('ann');
      const id = (await toolkitClient(base(), annToken).post('ops', 'watched', {})).body.data.run_id;
      await ended(id, annToken);
      const bob = await s.login('bob');
      for (const [method, suffix] of [
        ['GET', ''],
        ['GET', '/output'],
        ['POST', '/cancel'],
      ] as const) {
        const reply = await call(method, `${base()}/runs/${id}${suffix}`, { token: bob });
        expect(reply.status, `${method} ${suffix}`).to.equal(404);
        expect(reply.body.error.code).to.equal('run_not_found');
      }
      const unknown = await runOf('AAAAAAAAAAAAAAAAAAAAAA', annToken);
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('run_not_found');
      expect((await runOf(id, await s.login('vic'))).status).to.equal(200);
      expect((await runOf(id, await s.login('root'))).status).to.equal(200);
      // vic sees (view_power 50) but may not cancel (cancel_power 60).
      expect((await call('POST', `${base()}/runs/${id}/cancel`, { token: await s.login('vic') })).status).to.equal(403);
      const bobsList = await call('GET', `${base()}/runs?toolkit=ops`, { token: bob });
      expect(bobsList.body.data.runs.map((run: { id: string }) => run.id)).not.to.include(id);
      const vicsList = await call('GET', `${base()}/runs?endpoint=watched`, { token: await s.login('vic') });
      expect(vicsList.body.data.runs.map((run: { id: string }) => run.id)).to.include(id); // Through an API key of ann's: seen when its scope holds the toolkit, not found when it does not.
      const scoped = await apiKeyOf(base(), annToken, { name: 'ops', toolkits: ['ops'] });
      const elsewhere = await apiKeyOf(base(), annToken, { name: 'other', toolkits: ['notes'] });
      expect((await runOf(id, scoped.key)).status).to.equal(200);
      const outside = await runOf(id, elsewhere.key);
      expect(outside.status).to.equal(404);
      expect(outside.body.error.code).to.equal('run_not_found');
      expect((await call('GET', `${base()}/runs`, { token: elsewhere.key })).body.data.runs).to.deep.equal([]);
    });

    it('lists runs newest first with filters and a cursor', async () => {
      const token = await s.login('ann');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await toolkitClient(base(), token).post('ops', 'deploy', {})).body.data.run_id);
      for (const id of ids) await ended(id, token);
      const page1 = await call('GET', `${base()}/runs?endpoint=deploy&limit=2&status=succeeded&user=ann`, { token });
      expect(page1.status).to.equal(200);
      expect(page1.body.data.runs.map((run: { id: string }) => run.id)).to.deep.equal([ids[2], ids[1]]);
      const page2 = await call('GET', `${base()}/runs?endpoint=deploy&limit=2&status=succeeded&user=ann&cursor=${page1.body.data.next_cursor}`, { token });
      expect(page2.body.data.runs[0].id).to.equal(ids[0]);
      const bad = await call('GET', `${base()}/runs?status=done&limit=0`, { token });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.details.map((problem: { field: string }) => problem.field)).to.deep.equal(['status', 'limit']);
    });

    it('describes an async endpoint in openapi.json as answering 202 with its run, and 503 busy', async () => {
      const reply = await call('GET', `${base()}/openapi.json`, { token: await s.login('ann') });
      const responses = reply.body.paths['/tk/app/ops/deploy'].post.responses;
      expect(Object.keys(responses)).to.include.members(['202', '503']).and.not.include('200');
    });

    it("answers a Last-Event-ID (or ?after=) that is not a number 400 naming it, and a run id of no run's form 404", async () => {
      const token = await s.login('ann');
      const id = (await toolkitClient(base(), token).post('ops', 'deploy', {})).body.data.run_id;
      for (const [headers, query, field] of [
        [{ accept: 'text/event-stream', 'last-event-id': 'abc' }, '', 'Last-Event-ID'],
        [{ 'last-event-id': '-1' }, '', 'Last-Event-ID'],
        [{ accept: 'text/event-stream' }, '?after=1e3', 'after'],
      ] as const) {
        const reply = await call('GET', `${base()}/runs/${id}/output${query}`, { token, headers });
        expect(reply.status, field).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_payload');
        expect(reply.body.error.details[0].field).to.equal(field);
      }
      for (const odd of ['x'.repeat(200), '..%2F..%2Fetc']) {
        const reply = await call('GET', `${base()}/runs/${odd}/output`, { token, headers: { accept: 'text/event-stream' } });
        expect(reply.status, odd).to.equal(404);
        expect(reply.body.error.code).to.equal('run_not_found');
      }
      // A NUL in any URL is refused before a route reads it (docs/toolkits.md).
      const nul = await call('GET', `${base()}/runs/%00/output`, { token, headers: { accept: 'text/event-stream' } });
      expect(nul.status).to.equal(400);
      expect(nul.body.error.details[0]).to.include({ field: 'path', rule: 'nul_character' });
    });

    it('records the call (202, details.run_id), the cancel and the end in the audit trail', async () => {
      const token = await s.login('ann');
      const id = (await toolkitClient(base(), token).post('ops', 'deploy', {})).body.data.run_id;
      await ended(id, token);
      const rows = await eventually('the run_end row', async () => {
        const events = await s.bed.db('audit_events').where('details', 'like', `%${id}%`).orderBy('id');
        return events.some((event) => event.action === 'run_end') ? events : undefined;
      });
      const callRow = rows.find((event) => event.action === 'call')!;
      expect(Number(callRow.status)).to.equal(202);
      expect(JSON.parse(callRow.details).run_id).to.equal(id);
      const end = JSON.parse(rows.find((event) => event.action === 'run_end')!.details);
      expect(end).to.include({ run_id: id, status: 'succeeded', exit_code: 0 });
      expect(end.duration_ms).to.be.a('number');
    });
  });
}

describe(`runs: configuration problems (${dialects[0]!.name})`, function () {
  this.timeout(120_000);
  const s = withDatabase(dialects[0]!, []);
  const check = async (endpoint: Record<string, unknown>) => {
    const config = writeConfig({ db: s.bed.dbConfig });
    const tools = { name: 'tools', type: 'app', endpoints: [{ path: 'x', method: 'POST', type: 'exec', command: ['/bin/true'], ...endpoint }] };
    return runCli(['config', 'check', toolkitDir({ 'tools.yaml': tools }), '--config', config]);
  };

  it('refuses an unknown run value with its key path', async () => {
    const result = await check({ run: 'later' });
    expect(result.code).not.to.equal(0);
    expect(result.stdout + result.stderr).to.include('endpoints.0.run');
  });

  it('refuses a concurrency_key that names no field, or is not $payload/$context/$path', async () => {
    const missing = await check({ run: 'async', concurrency_key: '$payload.service', client_filter: { allowed_fields: ['other'] } });
    expect(missing.code).not.to.equal(0);
    expect(missing.stdout + missing.stderr)
      .to.include('concurrency_key')
      .and.include('names no field');
    const badForm = await check({ run: 'async', concurrency_key: 'service' });
    expect(badForm.code).not.to.equal(0);
    expect(badForm.stdout + badForm.stderr).to.include('endpoints.0.concurrency_key');
    const contextMissing = await check({ run: 'async', concurrency_key: '$context.nothing' });
    expect(contextMissing.code).not.to.equal(0);
    const ok = await check({ run: 'async', concurrency_key: '$context.username' });
    expect(ok.code, ok.stdout + ok.stderr).to.equal(0);
    const pathMissing = await check({ path: 'x/{service}', run: 'async', concurrency_key: '$path.host' });
    expect(pathMissing.code).not.to.equal(0);
    expect(pathMissing.stdout + pathMissing.stderr)
      .to.include('concurrency_key')
      .and.include("host is not a parameter of the endpoint's path");
    const pathOk = await check({ path: 'x/{service}', run: 'async', concurrency_key: '$path.service' });
    expect(pathOk.code, pathOk.stdout + pathOk.stderr).to.equal(0);
  });

  it('refuses a concurrency_key naming a context field that is an object in every call', async () => {
    for (const field of ['payload', 'db_context']) {
      const result = await check({ run: 'async', concurrency_key: `$context.${field}` });
      expect(result.code, field).to.equal(1);
      expect(result.stdout).to.include('endpoints.0.concurrency_key').and.include('a concurrency key is a string, number or boolean');
    }
  });
});
