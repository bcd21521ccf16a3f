import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { UserDirectory } from '../users/user-directory.js';
import type { LoginLimiter } from './login-limiter.js';
import type { JwtIssuers } from './jwt/jwt-issuers.js';

/** What the auth endpoints work with. */
export interface AuthServices {
  config: ServerConfig;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  /** auth.jwt_issuers: workload tokens act as their configured user. */
  jwtIssuers: JwtIssuers;
  users: UserDirectory;
  limiter: LoginLimiter;
  log: Logger;
  metrics: GatewayMetrics;
  /** Logins, logouts and clears are recorded in it (audit/audited-action.ts). */
  audit: AuditTrail;
}

export const isoTime = (epochMs: number): string => new Date(epochMs).toISOString();
