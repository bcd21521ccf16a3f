import type Koa from 'koa';
import { hashApiKey, keyAdmits, looksLikeApiKey, type ApiKey, type ApiKeyRead } from '../api-keys/api-key.js';
import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import { forbidden, unauthorized } from '../errors.js';
import type { GatewayContext, GatewayState } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { Session } from '../sessions/session.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { SessionRead } from '../sessions/session-table.js';
import { hashToken, looksLikeToken } from '../sessions/token.js';
import type { CallerRecord } from '../users/user-directory.js';
import type { Credential } from '../sessions/credential.js';
import { looksLikeJwt, type JwtIdentity, type JwtIssuers, type JwtRead } from './jwt/jwt-issuers.js';
import type { InternalCalls, InternalRunOptions } from './internal-calls.js';

/** What authentication adds to a request's state. */
export interface Authenticated {
  caller: CallerRecord;
  /** Which credential: a session (the first 8 hex of its token hash) or an API key (its id). */
  credential: Credential;
  /** The session, when the credential is one. */
  session?: Session;
  /** The API key, when the credential is one. */
  apiKey?: ApiKey;
  /** The workload token's identity (auth.jwt_issuers), when the credential is one. */
  jwt?: JwtIdentity;
  /** What the run of an internal call carries (auth/internal-calls.ts: a schedule's fire, a rerun). */
  internalRun?: InternalRunOptions;
}

/**
 * The toolkits a machine credential may call: undefined for a session (its user's reach), null for an API key or
 * a workload token without a scope (every toolkit its user may call), else the listed ones.
 */
export function machineScope(state: Authenticated): ReadonlySet<string> | null | undefined {
  if (state.apiKey) return state.apiKey.scope;
  return state.jwt?.scope;
}
/** What routes only a session may use (logout, clear-sessions, the key routes) have. */
export interface SessionAuthenticated extends Authenticated {
  session: Session;
}
export type AuthenticatedState = GatewayState & Authenticated;
export type SessionAuthenticatedState = GatewayState & SessionAuthenticated;

/** Where credentials are checked: sessions and API keys, each with this process's cache. */
export interface CredentialStores {
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  /** auth.jwt_issuers: platforms' signed tokens (none configured: a JWT is refused as any unknown token). */
  jwtIssuers?: JwtIssuers;
  /** The gateway's calls of its own endpoints: their identity comes with the request object (internal-calls.ts). */
  internalCalls?: InternalCalls;
}

export interface AuthenticateOptions {
  /** Whether this request keeps the session alive and counts as a key's use (everything but `status`). */
  countsAsUse: boolean;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header. */
const bearerToken = (authorization: string | undefined): string | undefined => (authorization === undefined ? undefined : BEARER.exec(authorization)?.[1]);

/** Whether a session read lets its caller in: not a disabled user, nor a session begun before a revocation. */
export function admits(read: SessionRead | undefined): read is SessionRead {
  return read !== undefined && !read.caller.disabled && read.caller.sessions_revoked_at < read.session.createdAt;
}

/**
 * Resolves `Authorization: Bearer <token>` to a live session and its user, both from one read of the
 * database (or this process's cache of it, see SessionStore, answered without waiting): a disabled user,
 * or one whose sessions were revoked (password change, CLI clear) after this session began, is 401.
 * A live API key is 403 here: keys cannot manage sessions or keys (docs/api-keys.md).
 */
export function authenticate(stores: CredentialStores, options: AuthenticateOptions): Stage<GatewayState, SessionAuthenticated> {
  return authenticator<SessionAuthenticated>(stores, options, false);
}

/**
 * The same, where an API key may act for its owner too (toolkit endpoints, openapi.json, status): a key
 * and its owner from one read as well (ApiKeyStore); revoked, expired, or of a disabled owner is 401.
 */
export function authenticateSessionOrKey(stores: CredentialStores, options: AuthenticateOptions): Stage<GatewayState, Authenticated> {
  return authenticator<Authenticated>(stores, options, true);
}

function authenticator<Added extends Authenticated>(
  { sessions, apiKeys, jwtIssuers, internalCalls }: CredentialStores,
  options: AuthenticateOptions,
  acceptsKeys: boolean,
): Stage<GatewayState, Added> {
  const admitSession = (ctx: GatewayContext, read: SessionRead | undefined): void => {
    if (!admits(read)) throw unauthorized();
    if (options.countsAsUse) sessions.touch(read);
    const state = ctx.state as AuthenticatedState;
    state.session = read.session;
    state.caller = read.caller;
    state.credential = read.credential;
  };
  const admitKey = (ctx: GatewayContext, read: ApiKeyRead | undefined): void => {
    if (!keyAdmits(read, Date.now())) throw unauthorized();
    if (!acceptsKeys) throw forbidden('an API key cannot manage sessions or API keys; log in as the user');
    if (options.countsAsUse) apiKeys.touch(read);
    const state = ctx.state as AuthenticatedState;
    state.apiKey = read.key;
    state.caller = read.caller;
    state.credential = read.credential;
  };
  const admitJwt = (ctx: GatewayContext, read: JwtRead | undefined): void => {
    if (!read || read.caller.disabled) throw unauthorized();
    if (!acceptsKeys) throw forbidden('a workload token cannot manage sessions or API keys; log in as the user');
    const state = ctx.state as AuthenticatedState;
    state.jwt = read.jwt;
    state.caller = read.caller;
    state.credential = read.credential;
  };
  return (ctx, next) => {
    const token = bearerToken(ctx.req.headers.authorization);
    if (token !== undefined && looksLikeToken(token)) return admitRead(sessions, hashToken(token), admitSession, ctx, next);
    // A session token (43 characters) can never have an API key's shape (`tkg_` + 43), nor the other way round.
    if (token !== undefined && looksLikeApiKey(token)) return admitRead(apiKeys, hashApiKey(token), admitKey, ctx, next);
    // Neither has dots: a JWT (three base64url parts) is told apart after both, at no cost to them.
    if (token !== undefined && jwtIssuers?.enabled && looksLikeJwt(token)) return admitRead(jwtIssuers, token, admitJwt, ctx, next);
    // An internal call sends no credential: its identity is the request object's (no client request has one).
    const internal = token === undefined && acceptsKeys ? internalCalls?.callerOf(ctx.req) : undefined;
    if (internal) {
      Object.assign(ctx.state, internal.authenticated, internal.run && { internalRun: internal.run });
      return next();
    }
    throw unauthorized();
  };
}

/** A store of credential reads with this process's cache (SessionStore, ApiKeyStore). */
interface CachedReads<R> {
  cached(hash: string): R | undefined;
  find(hash: string): Promise<R | undefined>;
}

/** Not async: a cached credential goes on at once, without a promise of its own; else it waits for the read. */
function admitRead<R>(
  reads: CachedReads<R>,
  hash: string,
  admit: (ctx: GatewayContext, read: R | undefined) => void,
  ctx: GatewayContext,
  next: Koa.Next,
): unknown {
  const cached = reads.cached(hash);
  if (cached) {
    admit(ctx, cached);
    return next();
  }
  return reads.find(hash).then((read) => {
    admit(ctx, read);
    return next();
  });
}
