import { createHmac, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, type Reply } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { githubPush } from './github-push.js';

const script = scriptWriter('tkgate-triggers-bin-');
const marks = tempDir('tkgate-triggers-marks-');
/** Each start of a run appends its context (the payload inside) to a file of the run's own: one line, one run. */
const marker = script('marker', 'echo "$1" >> "$MARKS/$TKGATE_RUN_ID"');
const linesOf = (runId: string): string[] => {
  const file = path.join(marks, runId);
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
};

// GitHub's documented example ("Validating webhook deliveries"): this secret, this body, this signature.
const GITHUB_SECRET = "It's a Secret to Everybody";
const GITHUB_EXAMPLE_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const STRIPE_SECRET = 'whsec_test_5f8c1e0a9b7d4c3e2f1a0b9c8d7e6f5a';
const STANDARD_SECRET = `whsec_${Buffer.from('standard-webhooks-test-key-32-bytes!').toString('base64')}`;
const HMAC_SECRET = 'hmac-shared-secret-9e1d';
const GITLAB_SECRET = 'gitlab-token-3c5e';

const secrets = tempDir('tkgate-trigger-secrets-');
const secretFile = (name: string, value: string): string => {
  const file = path.join(secrets, name);
  writeFileSync(file, `${value}\n`);
  return `file:${file}`;
};

const exec = (extra: Record<string, unknown>) => ({ method: 'POST', type: 'exec', command: [marker], env: { MARKS: marks }, ...extra });
const syncOk = (extra: Record<string, unknown>) => ({ method: 'POST', type: 'exec', command: ['/bin/echo', '{"ok":true}'], context: 'none', ...extra });

const toolkit = {
  name: 'hooks',
  type: 'app',
  endpoints: [
    exec({
      path: 'deploy',
      run: 'async',
      audit_fields: ['ref'],
      client_filter: { allowed_fields: ['ref', 'sha', 'repo'], required_fields: ['sha'] },
      trigger: {
        verify: 'github',
        secret: { secret: secretFile('github', GITHUB_SECRET) },
        as: 'deploy-bot',
        when: { header: { 'X-GitHub-Event': 'push' }, payload: { ref: 'refs/heads/main' } },
        payload_map: { ref: '$.ref', sha: '$.after', repo: '$.repository.full_name', author: '$.commits[0].author.username', none: '$.no.such' },
      },
    }),
    syncOk({ path: 'github-raw', trigger: { verify: 'github', secret: { secret: secretFile('github', GITHUB_SECRET) }, as: 'deploy-bot' } }),
    syncOk({
      path: 'slack',
      trigger: {
        verify: 'slack',
        secret: { secret: secretFile('slack', SLACK_SECRET) },
        as: 'deploy-bot',
        payload_map: { command: '$.command', text: '$.text' },
      },
    }),
    syncOk({ path: 'stripe', trigger: { verify: 'stripe', secret: { secret: secretFile('stripe', STRIPE_SECRET) }, as: 'deploy-bot' } }),
    exec({
      path: 'standard',
      run: 'async',
      trigger: { verify: 'standard-webhooks', secret: { secret: secretFile('standard', STANDARD_SECRET) }, as: 'deploy-bot' },
    }),
    syncOk({ path: 'gitlab', trigger: { verify: 'gitlab', secret: { secret: secretFile('gitlab', GITLAB_SECRET) }, as: 'deploy-bot' } }),
    syncOk({
      path: 'hmac',
      trigger: {
        verify: 'hmac',
        secret: { secret: secretFile('hmac', HMAC_SECRET) },
        as: 'deploy-bot',
        hmac: { header: 'X-Signature', algorithm: 'sha512', encoding: 'base64', prefix: 'sha512=' },
      },
    }),
  ],
};

const hex = (secret: string, ...parts: Array<string | Buffer>) => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
};
const now = () => Math.floor(Date.now() / 1000);

/** A push delivery as GitHub sends it: the body's bytes, its signature, its event and delivery id. */
const githubDelivery = (payload: unknown, delivery = randomUUID(), event = 'push') => {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/044aadd',
      'x-github-event': event,
      'x-github-delivery': delivery,
      'x-hub-signature-256': `sha256=${hex(GITHUB_SECRET, body)}`,
    },
  };
};

/** Signed triggers (docs/triggers.md) through one gateway per database; the dedupe across instances on a second one. */
for (const dialect of dialects) {
  describe(`signed triggers: providers start runs without a credential (${dialect.name})`, function () {
    this.timeout(90_000);
    const toolkits = toolkitDir({ 'hooks.yaml': toolkit });
    const s = withGateway(
      dialect,
      [
        { username: 'deploy-bot', power: 10 },
        { username: 'root', power: 100 },
      ],
      { runs: { heartbeat: '300ms' } },
      { toolkitsDir: toolkits },
    );
    let root: string;
    before(async () => {
      root = await s.login('root');
    });
    const url = (endpoint: string, on = s.gateway) => `${on.base}/tk/app/hooks/${endpoint}`;
    const post = (endpoint: string, body: string | Buffer, headers: Record<string, string>, on = s.gateway): Promise<Reply> =>
      call('POST', url(endpoint, on), { rawBody: body, headers });
    const runsOf = async (endpoint: string) =>
      (await call('GET', `${s.gateway.base}/runs?toolkit=hooks&endpoint=${endpoint}`, { token: root })).body.data.runs as unknown[];
    const ended = async (id: string) =>
      eventually(`run ${id} ended`, async () => {
        const run = (await call('GET', `${s.gateway.base}/runs/${id}`, { token: root })).body.data;
        return run.status === 'succeeded' ? run : undefined;
      });

    it("verifies GitHub's documented example (secret, body, signature); one byte changed is 401 invalid_signature, the reason only in the log", async () => {
      const headers = { 'content-type': 'application/json', 'x-hub-signature-256': GITHUB_EXAMPLE_SIGNATURE };
      // The signature holds: what follows is the body's own problem ("Hello, World!" is no JSON object).
      const verified = await post('github-raw', 'Hello, World!', headers);
      expect(verified.status, JSON.stringify(verified.body)).to.equal(400);
      expect(verified.body.error.code).to.equal('invalid_payload');
      const forged = await post('github-raw', 'Hello, World?', headers);
      expect(forged.status).to.equal(401);
      expect(forged.body.error.code).to.equal('invalid_signature');
      expect(JSON.stringify(forged.body)).not.to.include('match').and.not.to.include('757107ea');
      const logged = s.gateway.logs.find((line) => line.msg === 'signed call refused' && line.request_id === forged.body.request_id);
      expect(logged?.reason).to.equal('X-Hub-Signature-256 does not match the body');
      expect(s.gateway.output()).not.to.include(GITHUB_SECRET);
    });

    it('drives payload_map from a real push payload into an exec run, acting as the trigger user; a redelivery starts nothing twice', async () => {
      const delivery = githubDelivery(githubPush);
      const first = await post('deploy', delivery.body, delivery.headers);
      expect(first.status, JSON.stringify(first.body)).to.equal(202);
      const runId = first.body.data.run_id as string;
      expect(first.headers.get('location')).to.match(new RegExp(`/runs/${runId}$`));
      const run = await ended(runId);
      expect(run.actor).to.deep.equal({
        kind: 'trigger',
        trigger: 'github',
        username: 'deploy-bot',
        user_id: s.ids['deploy-bot'],
        delivery: delivery.headers['x-github-delivery'],
      });
      expect(run.payload).to.deep.equal({ ref: 'refs/heads/main' });
      const [line] = linesOf(runId);
      // client_filter's allowed_fields strip `author`; a missing path (`none`) leaves its field out.
      expect(JSON.parse(line!).payload).to.deep.equal({ ref: 'refs/heads/main', sha: githubPush.after, repo: 'acme/app' });

      const again = await post('deploy', delivery.body, delivery.headers);
      expect(again.status).to.equal(202);
      expect(again.body.data).to.include({ run_id: runId, duplicate: true });
      expect(again.headers.get('location')).to.equal(first.headers.get('location'));
      expect(linesOf(runId)).to.have.length(1);
      expect(await runsOf('deploy')).to.have.length(1);

      const audit = await s.bed.db('audit_events').where({ action: 'call', endpoint: 'deploy' }).select('actor', 'actor_user_id', 'details');
      expect(audit).to.have.length(1);
      expect(audit[0]!.actor).to.equal('trigger');
      expect(audit[0]!.actor_user_id).to.equal(s.ids['deploy-bot']);
      expect(JSON.parse(audit[0]!.details)).to.include({ trigger: 'github', delivery: delivery.headers['x-github-delivery'] });
    });

    it('answers 200 {"ignored": true} when `when` does not match, and runs nothing', async () => {
      const before = (await runsOf('deploy')).length;
      const ping = githubDelivery({ zen: 'Keep it logically awesome.', hook_id: 1 }, randomUUID(), 'ping');
      const pinged = await post('deploy', ping.body, ping.headers);
      expect(pinged.status).to.equal(200);
      expect(pinged.body.data).to.deep.equal({ ignored: true });
      const branch = githubDelivery({ ...githubPush, ref: 'refs/heads/feature' });
      expect((await post('deploy', branch.body, branch.headers)).body.data).to.deep.equal({ ignored: true });
      expect(await runsOf('deploy')).to.have.length(before);
    });

    it('refuses a missing header, a wrong secret, a changed byte and an old timestamp with 401, and runs nothing', async () => {
      const before = (await runsOf('deploy')).length;
      const delivery = githubDelivery(githubPush);
      const { 'x-hub-signature-256': _signature, ...unsigned } = delivery.headers;
      const wrong = { ...delivery.headers, 'x-hub-signature-256': `sha256=${hex('not the secret', delivery.body)}` };
      const changed = delivery.body.replace('acme/app', 'acme/apq');
      for (const [body, headers] of [
        [delivery.body, unsigned],
        [delivery.body, wrong],
        [changed, delivery.headers],
      ] as const) {
        const refused = await post('deploy', body, headers);
        expect(refused.status).to.equal(401);
        expect(refused.body.error.code).to.equal('invalid_signature');
      }
      const old = now() - 600;
      const slackBody = 'command=%2Fdeploy&text=main';
      const stale = await post('slack', slackBody, {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': String(old),
        'x-slack-signature': `v0=${hex(SLACK_SECRET, `v0:${old}:${slackBody}`)}`,
      });
      expect(stale.status).to.equal(401);
      expect(await runsOf('deploy')).to.have.length(before);
    });

    it("verifies Slack's and Stripe's base strings signed with a current timestamp; a Stripe redelivery answers as the first", async () => {
      const ts = String(now());
      const form = 'token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&command=%2Fdeploy&text=main&user_name=steve';
      const slack = await post('slack', form, {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${hex(SLACK_SECRET, `v0:${ts}:${form}`)}`,
      });
      expect(slack.status, JSON.stringify(slack.body)).to.equal(200);
      expect(slack.body.data).to.deep.equal({ ok: true });

      const event = JSON.stringify({
        id: `evt_${randomUUID().replace(/-/g, '')}`,
        object: 'event',
        type: 'charge.succeeded',
        data: { object: { id: 'ch_1' } },
      });
      const signature = `t=${ts},v1=${hex('an old secret', `${ts}.${event}`)},v1=${hex(STRIPE_SECRET, `${ts}.${event}`)}`;
      const headers = { 'content-type': 'application/json', 'stripe-signature': signature };
      const stripe = await post('stripe', event, headers);
      expect(stripe.status, JSON.stringify(stripe.body)).to.equal(200);
      expect(stripe.body.data).to.deep.equal({ ok: true });
      const again = await post('stripe', event, headers);
      expect(again.status).to.equal(200);
      expect(again.body.data).to.deep.equal({ ok: true, duplicate: true });
    });

    it('verifies a Standard Webhooks delivery signed by its library, a GitLab token and a configured HMAC', async () => {
      const body = JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
      const id = `msg_${randomUUID()}`;
      const signed = new Webhook(STANDARD_SECRET).sign(id, new Date(), body);
      const standard = await post('standard', body, {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(now()),
        'webhook-signature': signed,
      });
      expect(standard.status, JSON.stringify(standard.body)).to.equal(202);
      await ended(standard.body.data.run_id);

      const gitlab = await post('gitlab', '{"object_kind":"push"}', {
        'content-type': 'application/json',
        'x-gitlab-token': GITLAB_SECRET,
        'x-gitlab-event-uuid': randomUUID(),
      });
      expect(gitlab.status).to.equal(200);
      expect((await post('gitlab', '{}', { 'content-type': 'application/json', 'x-gitlab-token': `${GITLAB_SECRET}x` })).status).to.equal(401);

      const text = '{"event":"build.done"}';
      const hmac = `sha512=${createHmac('sha512', HMAC_SECRET).update(text).digest('base64')}`;
      expect((await post('hmac', text, { 'content-type': 'application/json', 'x-signature': hmac })).status).to.equal(200);
      expect((await post('hmac', text, { 'content-type': 'application/json', 'x-signature': hmac.replace('sha512=', '') })).status).to.equal(401);
    });

    it('keeps the body limits (a body over 1 MiB is 413) and answers a signed malformed JSON body 400, running nothing', async () => {
      const before = (await runsOf('deploy')).length;
      const big = JSON.stringify({ ...githubPush, padding: 'x'.repeat(1024 * 1024) });
      const large = await post('deploy', big, { ...githubDelivery(githubPush).headers, 'x-hub-signature-256': `sha256=${hex(GITHUB_SECRET, big)}` });
      expect(large.status).to.equal(413);
      expect(large.body.error.code).to.equal('payload_too_large');
      const malformed = '{"ref": "refs/heads/main",';
      const bad = await post('deploy', malformed, { ...githubDelivery(githubPush).headers, 'x-hub-signature-256': `sha256=${hex(GITHUB_SECRET, malformed)}` });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('invalid_payload');
      expect(await runsOf('deploy')).to.have.length(before);
    });

    it('still takes an ordinary credential: a session call runs as its user, checked as any call', async () => {
      const reply = await call('POST', url('deploy'), { token: root, body: { ref: 'refs/heads/main', sha: 'abc' } });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
      const run = await ended(reply.body.data.run_id);
      expect(run.actor).to.deep.equal({ kind: 'session', username: 'root', user_id: s.ids.root });
      // A credential that is not valid is 401 unauthorized, whatever signature the call carries.
      const delivery = githubDelivery(githubPush);
      const bearer = await post('deploy', delivery.body, { ...delivery.headers, authorization: 'Bearer nonsense' });
      expect(bearer.status).to.equal(401);
      expect(bearer.body.error.code).to.equal('unauthorized');
    });

    if (dialect.name !== 'sqlite')
      describe('on two instances of one database', () => {
        let other: GatewayProcess;
        before(async () => {
          other = await startGateway({
            config: { db: s.bed.dbConfig, toolkits: { dir: toolkits, watch: false }, plugins: pluginsWithTestFunctions, runs: { heartbeat: '300ms' } },
          });
        });
        after(() => other?.stop());

        it('answers a redelivery on the other instance with the first run: one run, the same run id', async () => {
          const delivery = githubDelivery({ ...githubPush, after: 'f00dfeed00000000000000000000000000000000' });
          const first = await post('deploy', delivery.body, delivery.headers);
          expect(first.status).to.equal(202);
          const again = await post('deploy', delivery.body, delivery.headers, other);
          expect(again.status).to.equal(202);
          expect(again.body.data).to.include({ run_id: first.body.data.run_id, duplicate: true });
          await ended(first.body.data.run_id);
          expect(linesOf(first.body.data.run_id)).to.have.length(1);
        });

        it('answers one delivery sent to both instances at once with one run', async () => {
          const delivery = githubDelivery({ ...githubPush, after: 'beadfeed00000000000000000000000000000000' });
          const both = await Promise.all([post('deploy', delivery.body, delivery.headers), post('deploy', delivery.body, delivery.headers, other)]);
          for (const reply of both) expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
          expect(both[0]!.body.data.run_id).to.equal(both[1]!.body.data.run_id);
          expect(both.filter((reply) => reply.body.data.duplicate === true)).to.have.length(1);
          await ended(both[0]!.body.data.run_id);
          expect(linesOf(both[0]!.body.data.run_id)).to.have.length(1);
        });
      });
  });
}
