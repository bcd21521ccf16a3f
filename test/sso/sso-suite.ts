import { expect } from 'chai';
import type { DialectTarget } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { addUsers, createTestbed, type Testbed } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, type Reply } from '../support/http.js';
import { TestIdentityProvider } from './identity-provider.js';
import { UserAgent } from './user-agent.js';

export const CLIENT_ID = 'tkgate-gateway';
export const CLIENT_SECRET = 'a client secret that is long enough to be real';
/** The front end's page the gateway may send people back to. */
export const APP = 'http://app.example.test';
export const RETURN_TO = `${APP}/after`;

/** One gateway's view of a sign-in. */
export interface SsoSuite {
  bed: Testbed;
  idp: TestIdentityProvider;
  gateways: GatewayProcess[];
  /** The first gateway's base URL. */
  base: string;
}

export interface SsoOptions {
  /** Gateways on the one database (default 1). */
  instances?: number;
  /** Merged over the default provider entry. */
  provider?: Record<string, unknown>;
  /** Merged over the gateways' configuration. */
  config?: Record<string, unknown>;
  users?: Array<{ username: string; power?: number; group?: string }>;
}

/** The provider entry the suites configure; `secretFromEnv` leaves the secret to TKGATE_OIDC_CORP_CLIENT_SECRET. */
export function providerEntry(issuer: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'corp',
    issuer,
    client_id: CLIENT_ID,
    scopes: ['openid', 'profile', 'email', 'groups'],
    return_to: [RETURN_TO],
    power: {
      default: 1,
      rules: [
        { claim: 'groups', contains: 'admins', power: 100 },
        { claim: 'groups', contains: 'staff', power: 10 },
      ],
    },
    core_group: { claim: 'groups', map: { staff: 'employees', admins: 'operators' } },
    post_logout_redirect_uri: `${APP}/bye`,
    ...extra,
  };
}

/**
 * A database, a real OpenID provider and `instances` gateways on the database. The gateways start before the
 * provider is configured (their discovery is retried, as with a provider that is down at start); the suite
 * then registers their callback URLs and waits until the first gateway has discovered it.
 */
export function withSso(dialect: DialectTarget, options: SsoOptions = {}): SsoSuite {
  const suite = { gateways: [] } as unknown as SsoSuite;
  before(async function () {
    this.timeout(60_000);
    suite.bed = await createTestbed(dialect);
    await addUsers(suite.bed.db, options.users ?? []);
    suite.idp = await new TestIdentityProvider().listen();
    for (let i = 0; i < (options.instances ?? 1); i++) {
      // Behind a load balancer every instance has the same callback URL: the later ones name the first one's.
      const sameCallback = i === 0 ? {} : { redirect_uri: callbackUrl(suite.gateways[0]!.base) };
      const config = {
        db: suite.bed.dbConfig,
        auth: { oidc: { providers: [providerEntry(suite.idp.issuer, { ...options.provider, ...sameCallback })] } },
        sessions: { cache_ttl: '1s' },
        ...options.config,
      };
      suite.gateways.push(await startGateway({ config, env: { TKGATE_OIDC_CORP_CLIENT_SECRET: CLIENT_SECRET } }));
    }
    suite.base = suite.gateways[0]!.base;
    await suite.idp.configure({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUris: [callbackUrl(suite.base)],
      backchannelLogoutUri: `${suite.base}/auth/oidc/corp/backchannel-logout`,
      postLogoutRedirectUris: [`${APP}/bye`],
    });
    for (const gateway of suite.gateways) {
      await eventually('the gateway discovered the provider', () => gateway.logs.some((line) => line.msg === 'oidc provider discovered'), 30_000);
    }
  });
  after(async () => {
    for (const gateway of suite.gateways) await gateway.stop();
    await suite.idp?.close();
    await suite.bed?.close();
  });
  return suite;
}

export const callbackUrl = (base: string, provider = 'corp') => `${base}/auth/oidc/${provider}/callback`;

export const loginUrl = (base: string, returnTo = RETURN_TO, provider = 'corp') =>
  `${base}/auth/oidc/${provider}/login?${new URLSearchParams({ return_to: returnTo })}`;

/** A browser's sign-in of `sub` up to the callback URL the provider sends it to (not yet visited), and that browser. */
export async function browserAtCallback(base: string, sub: string): Promise<{ agent: UserAgent; callback: string }> {
  const agent = new UserAgent();
  return { agent, callback: await agent.signIn(loginUrl(base), sub, callbackUrl(base)) };
}

/**
 * The gateway's answer to a callback URL: where it sends the browser, and the fragment's parameters. Visited by
 * `agent` (the browser that started the sign-in, with its cookies), else by a client with no cookies at all.
 */
export async function visitCallback(url: string, agent?: UserAgent): Promise<{ status: number; location: string; fragment: URLSearchParams; body: string }> {
  const response = agent ? await agent.get(url) : await fetch(url, { redirect: 'manual' });
  const location = response.headers.get('location') ?? '';
  const fragment = new URLSearchParams(location.includes('#') ? location.slice(location.indexOf('#') + 1) : '');
  return { status: response.status, location, fragment, body: await response.text() };
}

/** The browser each login_code was handed to (its cookie binds the code to it): the exchange is made from there. */
const browsersOfCodes = new Map<string, UserAgent>();

/** A whole sign-in of `sub` through `base` (the callback may be given to another instance): the login_code. */
export async function signInCode(suite: SsoSuite, sub: string, options: { base?: string; callbackBase?: string; agent?: UserAgent } = {}): Promise<string> {
  const base = options.base ?? suite.base;
  const agent = options.agent ?? new UserAgent();
  let callback = await agent.signIn(loginUrl(base), sub, `${base}/auth/oidc/corp/callback`);
  if (options.callbackBase) callback = callback.replace(base, options.callbackBase);
  const answer = await visitCallback(callback, agent);
  expect(answer.status, answer.body).to.equal(302);
  expect(answer.location.startsWith(`${RETURN_TO}#`), answer.location).to.equal(true);
  const code = answer.fragment.get('login_code');
  expect(code, answer.location).to.be.a('string');
  browsersOfCodes.set(code!, agent);
  return code!;
}

/**
 * POST {base}/auth/oidc/exchange from `browser`: by default the browser the code was handed to (with its cookies),
 * `null` for a client with no cookies at all.
 */
export async function exchange(
  base: string,
  loginCode: unknown,
  browser: UserAgent | null | undefined = browsersOfCodes.get(String(loginCode)),
): Promise<Reply> {
  const url = `${base}/auth/oidc/exchange`;
  if (!browser) return call('POST', url, { body: { login_code: loginCode } });
  const response = await browser.postJson(url, { login_code: loginCode });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? text : JSON.parse(text) };
}

/** A whole sign-in and exchange: the session's token. */
export async function signInToken(suite: SsoSuite, sub: string, options: Parameters<typeof signInCode>[2] = {}): Promise<string> {
  const reply = await exchange(suite.base, await signInCode(suite, sub, options));
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body.data.token as string;
}
