import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { JWTPayload } from 'jose';
import { WebSocket, WebSocketServer } from 'ws';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { authClient, call } from '../support/http.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { hmacWithSecret, signed, strangerKey, unsigned } from './forged-tokens.js';
import { CLIENT_ID, CLIENT_SECRET, exchange, signInCode, withSso } from './sso-suite.js';
import { UserAgent } from './user-agent.js';

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** A WebSocket service (a dashboard) behind the gateways: an OIDC user's socket to it ends with their session. */
const dashboardService = new WebSocketServer({ port: 0, host: '127.0.0.1' });
dashboardService.on('connection', (socket) => socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary })));
await new Promise<void>((resolve) => dashboardService.once('listening', () => resolve()));
after(() => new Promise<void>((resolve) => (dashboardService.clients.forEach((client) => client.terminate()), dashboardService.close(() => resolve()))));
const toolkits = toolkitDir({
  'dash.yaml': {
    name: 'dash',
    type: 'app',
    endpoints: [
      {
        path: 'live',
        method: 'GET',
        type: 'http',
        websocket: true,
        upstream: { url: `ws://127.0.0.1:${(dashboardService.address() as AddressInfo).port}/live` },
      },
    ],
  },
});

/** An open socket through `base` with `token`, and how it closed (code, reason) once it does. */
async function openSocket(base: string, token: string): Promise<{ socket: WebSocket; closed: Promise<[number, string]> }> {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/tk/app/dash/live`, { headers: { authorization: `Bearer ${token}` } });
  const closed = new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, reason.toString()])));
  await new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)));
  return { socket, closed };
}

for (const dialect of dialects) {
  describe(`back-channel logout across two instances on one database (${dialect.name})`, function () {
    this.timeout(90_000);
    const s = withSso(dialect, { instances: 2, config: { toolkits: { dir: toolkits, watch: false } } });
    const [a, b] = [() => s.gateways[0]!.base, () => s.gateways[1]!.base];
    const statusOn = async (base: string, token: string) => (await authClient(base).status(token)).status;
    const endpoint = () => `${a()}/auth/oidc/corp/backchannel-logout`;
    const post = (logoutToken: string, contentType = 'application/x-www-form-urlencoded') =>
      fetch(endpoint(), { method: 'POST', headers: { 'content-type': contentType }, body: new URLSearchParams({ logout_token: logoutToken }) });
    const logoutClaims = (extra: JWTPayload = {}): JWTPayload => ({
      iss: s.idp.issuer,
      aud: CLIENT_ID,
      iat: Math.floor(Date.now() / 1000),
      jti: randomUUID(),
      events: { [EVENT]: {} },
      sub: 'u-nobody',
      ...extra,
    });
    const sign = (claims: JWTPayload) => signed(claims, s.idp.signingKey, s.idp.kid);

    let firstAgent: UserAgent;
    let first: string;
    let second: string;
    before(async () => {
      s.idp.addAccount({ sub: 'u-1001', claims: { preferred_username: 'alice' } });
      // Two sign-ins of alice (two sessions at the provider). The first's callback and exchange reach the other instance.
      firstAgent = new UserAgent();
      const firstReply = await exchange(b(), await signInCode(s, 'u-1001', { agent: firstAgent, callbackBase: b() }));
      expect(firstReply.status, JSON.stringify(firstReply.body)).to.equal(200);
      first = firstReply.body.data.token;
      const secondReply = await exchange(a(), await signInCode(s, 'u-1001'));
      second = secondReply.body.data.token;
      for (const base of [a(), b()]) for (const token of [first, second]) expect(await statusOn(base, token)).to.equal(200);
    });

    it('ending the provider session ends that session (its sid) on both instances, and only that one: its WebSocket closes (4401 session_ended)', async () => {
      // The first session's socket is held on the instance that did not sign it in; the second's stays open.
      const firstSocket = await openSocket(a(), first);
      const secondSocket = await openSocket(b(), second);
      const confirmed = await firstAgent.endProviderSession(`${s.idp.issuer}/session/end?client_id=${CLIENT_ID}`);
      expect(confirmed.status).to.be.within(200, 399);
      expect(s.idp.backchannelErrors).to.deep.equal([]);
      for (const base of [a(), b()]) await eventually(`the first session ended on ${base}`, async () => (await statusOn(base, first)) === 401);
      for (const base of [a(), b()]) expect(await statusOn(base, second)).to.equal(200);
      expect(await firstSocket.closed).to.deep.equal([4401, 'session_ended']);
      const echoed = new Promise<string>((resolve) => secondSocket.socket.once('message', (data) => resolve(data.toString())));
      secondSocket.socket.send('still here');
      expect(await echoed).to.equal('still here');
      secondSocket.socket.close(1000);
      await secondSocket.closed;
    });

    const refusals: Array<[string, () => Promise<string>]> = [
      ['with a nonce', () => sign(logoutClaims({ sub: 'u-1001', nonce: 'n' }))],
      ['for another audience', () => sign(logoutClaims({ sub: 'u-1001', aud: 'another-client' }))],
      ['from another issuer', () => sign(logoutClaims({ sub: 'u-1001', iss: 'http://127.0.0.1:1' }))],
      ['issued more than 5 minutes ago', () => sign(logoutClaims({ sub: 'u-1001', iat: Math.floor(Date.now() / 1000) - 600 }))],
      ['without the back-channel logout event', () => sign(logoutClaims({ sub: 'u-1001', events: { 'http://example.test/other': {} } }))],
      ['without sid or sub', () => sign(logoutClaims({ sub: undefined }))],
      ['without a jti', () => sign(logoutClaims({ sub: 'u-1001', jti: undefined }))],
      ['signed by a key the provider never published', async () => signed(logoutClaims({ sub: 'u-1001' }), await strangerKey(), s.idp.kid)],
      ['with alg none', async () => unsigned(logoutClaims({ sub: 'u-1001' }))],
      ['signed with HMAC and the client secret', () => hmacWithSecret(logoutClaims({ sub: 'u-1001' }), CLIENT_SECRET)],
      ['that is not a JWT', async () => 'not-a-jwt'],
    ];
    for (const [what, make] of refusals) {
      it(`a logout token ${what} is 400 {"error":"invalid_request"} and ends nothing`, async () => {
        const response = await post(await make());
        expect(response.status).to.equal(400);
        expect(await response.json()).to.deep.equal({ error: 'invalid_request' });
        expect(await statusOn(a(), second)).to.equal(200);
      });
    }

    it('a body that is not a form, or has no logout_token, is 400 {"error":"invalid_request"}', async () => {
      const json = await call('POST', endpoint(), { body: { logout_token: await sign(logoutClaims({ sub: 'u-1001' })) } });
      expect(json.status).to.equal(400);
      expect(json.body).to.deep.equal({ error: 'invalid_request' });
      const empty = await fetch(endpoint(), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'other=1' });
      expect(empty.status).to.equal(400);
      expect(await statusOn(a(), second)).to.equal(200);
    });

    it('a replayed jti is refused', async () => {
      const token = await sign(logoutClaims({ sub: 'u-nobody' }));
      const accepted = await post(token);
      expect(accepted.status).to.equal(200);
      expect(accepted.headers.get('cache-control')).to.equal('no-store');
      expect(await accepted.text()).to.equal('');
      const replayed = await post(token);
      expect(replayed.status).to.equal(400);
    });

    it('a logout token naming the user (sub) ends every session of that user on both instances', async () => {
      const response = await post(await sign(logoutClaims({ sub: 'u-1001' })));
      expect(response.status).to.equal(200);
      for (const base of [a(), b()]) await eventually(`alice's sessions ended on ${base}`, async () => (await statusOn(base, second)) === 401);
      expect(Number((await s.bed.db('sessions').count({ n: '*' }).first())!.n)).to.equal(0);
    });

    it('the audit trail holds the sign-ins (oidc_login) and the back-channel logouts, refused ones too, never a token', async () => {
      const alice = Number((await s.bed.db('users').where({ username: 'alice' }).first('id')).id);
      const rows = (await s.bed.db('audit_events').orderBy('id').select()) as Array<Record<string, any>>;
      const logins = rows.filter((row) => row.action === 'oidc_login');
      expect(logins.map((row) => [row.actor, Number(row.actor_user_id), Number(row.status), row.code, JSON.parse(row.details)])).to.deep.equal([
        ['oidc', alice, 200, 'ok', { provider: 'corp' }],
        ['oidc', alice, 200, 'ok', { provider: 'corp' }],
      ]);
      for (const row of logins) expect(row.credential).to.match(/^[0-9a-f]{8}$/);
      const logouts = rows.filter((row) => row.action === 'backchannel_logout');
      const ended = logouts.filter((row) => row.code === 'ok').map((row) => JSON.parse(row.details));
      expect(ended).to.deep.include({ provider: 'corp', sessions_ended: 1 });
      expect(logouts.filter((row) => Number(row.status) === 400 && row.code === 'invalid_request').length).to.be.at.least(refusals.length);
      const table = JSON.stringify(rows);
      for (const token of [first, second]) expect(table).not.to.include(token);
      expect(table).not.to.include('eyJ');
    });
  });
}
