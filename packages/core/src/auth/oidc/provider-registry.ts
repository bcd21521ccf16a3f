import * as client from 'openid-client';
import type { Logger } from '../../log.js';
import type { OidcProviderConfig } from '../../config/oidc-providers.js';

/** A configured provider and, once discovered, openid-client's configuration of it (metadata, client auth). */
export interface OidcProvider {
  readonly config: OidcProviderConfig;
  readonly discovered: client.Configuration | undefined;
}

/** Discovery retries: soon, then backing off to this, for as long as the gateway runs. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;
const DISCOVERY_TIMEOUT_S = 10;

/**
 * Plain http is allowed for an issuer on the loopback interface only (a provider started by tests or a
 * developer); anything else must be https, as openid-client insists.
 */
export function isLoopbackIssuer(issuer: string): boolean {
  const url = new URL(issuer);
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

function clientAuthentication(config: OidcProviderConfig): client.ClientAuth {
  return config.token_endpoint_auth_method === 'client_secret_post'
    ? client.ClientSecretPost(config.client_secret!)
    : client.ClientSecretBasic(config.client_secret!);
}

/**
 * The providers of auth.oidc.providers. Each is discovered (`<issuer>/.well-known/openid-configuration`) at
 * start without holding the start up; one that cannot be reached is logged and retried in the background, and
 * meanwhile its logins answer 503 `unavailable`. openid-client checks every ID token's signature against the
 * JWKS (non-repudiation checks on), keeps the JWKS and fetches it again when a token names a `kid` it does not
 * hold (key rotation). Only asymmetric algorithms verify (oauth4webapi implements no HMAC or `none`
 * verification), so a token signed with the client secret as key, or not at all, is refused.
 */
export class OidcProviders {
  private readonly byName = new Map<string, { config: OidcProviderConfig; discovered?: client.Configuration }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    configs: readonly OidcProviderConfig[],
    private readonly log: Logger,
  ) {
    for (const config of configs) this.byName.set(config.name, { config });
  }

  /** Starts discovery of every provider; resolves once each has been tried once (never rejects). */
  start(): Promise<void> {
    return Promise.all([...this.byName.keys()].map((name) => this.discover(name, RETRY_FIRST_MS))).then(() => undefined);
  }

  get(name: string): OidcProvider | undefined {
    const entry = this.byName.get(name);
    return entry && { config: entry.config, discovered: entry.discovered };
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private async discover(name: string, retryMs: number): Promise<void> {
    const entry = this.byName.get(name)!;
    const { config } = entry;
    try {
      entry.discovered = await client.discovery(
        new URL(config.issuer),
        config.client_id,
        { client_secret: config.client_secret },
        clientAuthentication(config),
        {
          // The ID token's signature is checked against the JWKS even though it comes straight from the token endpoint
          // (OIDC Core 3.1.3.7 lets a client rely on TLS instead; the gateway does not).
          execute: isLoopbackIssuer(config.issuer) ? [client.allowInsecureRequests, client.enableNonRepudiationChecks] : [client.enableNonRepudiationChecks],
          timeout: DISCOVERY_TIMEOUT_S,
        },
      );
      this.log.info('oidc provider discovered', { provider: name, issuer: config.issuer });
    } catch (err) {
      if (this.stopped) return;
      this.log.warn('oidc provider not discovered; retrying', { provider: name, issuer: config.issuer, error: (err as Error).message, retry_in_ms: retryMs });
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.discover(name, Math.min(retryMs * 2, RETRY_MAX_MS));
      }, retryMs);
      timer.unref();
      this.timers.add(timer);
    }
  }
}
