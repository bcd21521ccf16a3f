import type { AuditTrail } from '../../audit/audit-trail.js';
import type { ServerConfig } from '../../config/server-config.js';
import type { Database } from '../../db/connect.js';
import type { Logger } from '../../log.js';
import type { GatewayMetrics } from '../../ops/metrics.js';
import type { SessionStore } from '../../sessions/session-store.js';
import type { UserDirectory } from '../../users/user-directory.js';
import type { LoginCodes } from './login-codes.js';
import type { LoginStartServices } from './login-starts.js';
import type { LogoutTokens } from './logout-tokens.js';
import type { PendingLogins } from './pending-logins.js';
import type { OidcProviders } from './provider-registry.js';

/** What the OIDC routes work with. */
export interface OidcServices {
  config: ServerConfig;
  db: Database;
  sessions: SessionStore;
  users: UserDirectory;
  log: Logger;
  metrics: GatewayMetrics;
  audit: AuditTrail;
  providers: OidcProviders;
  pending: PendingLogins;
  codes: LoginCodes;
  logoutTokens: LogoutTokens;
  /** Where login starts are counted per client address (login-starts.ts). */
  loginStarts: LoginStartServices;
}

/** The callback URL registered at a provider: its redirect_uri, else server.public_url (else the request's origin) + the path. */
export function redirectUriOf(config: ServerConfig, provider: { name: string; redirect_uri?: string | undefined }, requestOrigin: string): string {
  return provider.redirect_uri ?? `${config.server.public_url || requestOrigin}${config.server.base_url}/auth/oidc/${provider.name}/callback`;
}

/** The origin the request was addressed to: the listener's scheme and the Host header (Koa 3's ctx.origin is the Origin header). */
export const requestOrigin = (ctx: { protocol: string; host: string }): string => `${ctx.protocol}://${ctx.host}`;
