import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A person known to the test identity provider, with the claims it releases about them. */
export interface TestAccount {
  /** The subject; also what is typed into the provider's login form. */
  sub: string;
  claims: Record<string, unknown>;
}

export interface ProviderClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  backchannelLogoutUri?: string;
  postLogoutRedirectUris?: string[];
}

/**
 * A real OpenID provider (panva's oidc-provider, certified) on 127.0.0.1, with its development login and
 * consent pages, sessions, RP-initiated and back-channel logout. It listens before it is configured: a
 * gateway can start first (and finds it not ready, as a provider that is down) and its callback URL, known
 * only then, is registered by `configure`. `tamper` rewrites the ID token of token responses and `tokenDelayMs` delays them (hostile tests).
 */
export class TestIdentityProvider {
  readonly accounts = new Map<string, TestAccount>();
  /** The provider's signing key (its JWKS holds the public half), for forging tokens it would have signed. */
  signingKey!: CryptoKey;
  readonly kid = `key-${randomUUID()}`;
  tamper: ((idToken: string) => Promise<string>) | undefined;
  /** How long the token endpoint keeps a code exchange waiting (a slow or hung provider). */
  tokenDelayMs = 0;
  /** Back-channel logout calls that failed (what the provider would log). */
  readonly backchannelErrors: string[] = [];
  private provider: any;
  private server!: Server;
  issuer = '';

  async listen(): Promise<this> {
    this.server = createServer((req, res) => {
      if (!this.provider) {
        res.statusCode = 503;
        res.end('not ready');
        return;
      }
      this.provider.callback()(req, res);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  addAccount(account: TestAccount): void {
    this.accounts.set(account.sub, account);
  }

  async configure(client: ProviderClient): Promise<void> {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    this.signingKey = privateKey;
    const jwk: JWK = { ...(await exportJWK(privateKey)), kid: this.kid, alg: 'RS256', use: 'sig' };
    const provider = new Provider(this.issuer, {
      clients: [
        {
          client_id: client.clientId,
          client_secret: client.clientSecret,
          redirect_uris: client.redirectUris,
          response_types: ['code'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_basic',
          ...(client.backchannelLogoutUri ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
          post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
        },
      ],
      jwks: { keys: [jwk] },
      cookies: { keys: [randomUUID()] },
      claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email', 'email_verified'], groups: ['groups'], roles: ['roles'] },
      scopes: ['openid', 'offline_access', 'profile', 'email', 'groups', 'roles'],
      // Claims asked for by scope go into the ID token too, as Keycloak and most providers do.
      conformIdTokenClaims: false,
      pkce: { required: () => true },
      features: { devInteractions: { enabled: true }, backchannelLogout: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      // The relying party (the gateway under test) is on loopback, which the provider's SSRF guard refuses to call.
      fetch: (url: string, { dispatcher, ...options }: RequestInit & { dispatcher?: unknown }) => (void dispatcher, globalThis.fetch(url, options)),
      findAccount: (_ctx: unknown, id: string) => {
        const account = this.accounts.get(id);
        return account && { accountId: id, claims: () => ({ ...account.claims, sub: account.sub }) };
      },
    });
    provider.use(async (ctx: any, next: () => Promise<void>) => {
      if (ctx.path === '/token' && this.tokenDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.tokenDelayMs));
      await next();
      if (ctx.path === '/token' && this.tamper && ctx.body?.id_token) ctx.body = { ...ctx.body, id_token: await this.tamper(ctx.body.id_token) };
    });
    provider.on('backchannel.error', (_ctx: unknown, err: Error) => this.backchannelErrors.push(err.message));
    this.provider = provider;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
