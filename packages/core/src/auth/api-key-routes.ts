import type { AuthServices } from './auth-services.js';
import { authenticate, type SessionAuthenticatedState } from './authenticate.js';
import type { Database } from '../db/connect.js';
import { forbidden, invalidPayload, notFound } from '../errors.js';
import { sendData } from '../http/envelope.js';
import { readJsonObjectBody } from '../http/json-body.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { CallerRecord } from '../users/user-directory.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../api-keys/api-key-admin.js';
import { checkApiKeyRequest } from '../api-keys/api-key-request.js';
import { auditedAction, noteAudit } from '../audit/audited-action.js';

export type ApiKeyServices = AuthServices & { db: Database };

const CREATE_FIELDS = new Set(['name', 'toolkits', 'expires_in', 'username']);

/**
 * The user whose keys a call concerns: the caller, or (with auth.admin_power) the user `username` names.
 * A caller below it naming someone else is 403; an admin naming no user, 404 user_not_found.
 */
async function ownerOf(ctx: { state: SessionAuthenticatedState }, username: unknown, { users, config }: ApiKeyServices): Promise<CallerRecord> {
  const { caller } = ctx.state;
  if (username === undefined || username === null) return caller;
  if (typeof username !== 'string' || username === '')
    throw invalidPayload([{ field: 'username', rule: 'type', message: 'username must be a non-empty string' }], 'username must be a non-empty string');
  if (username === caller.username) return caller;
  if (caller.power < config.auth.admin_power) throw forbidden(`the API keys of another user need power ${config.auth.admin_power}`);
  const owner = await users.findByUsername(username);
  if (!owner) throw notFound('user_not_found', `no user named ${username}`);
  return owner;
}

/** POST {base}/auth/api-keys: a new key (its text in this answer only), 201. */
function create(services: ApiKeyServices): Stage<SessionAuthenticatedState> {
  return async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    const unknown = Object.keys(body).filter((field) => !CREATE_FIELDS.has(field));
    if (unknown.length > 0)
      throw invalidPayload(
        unknown.map((field) => ({ field, rule: 'unknown', message: `${field} is not a field of a new API key (name, toolkits, expires_in, username)` })),
        `unknown field(s): ${unknown.join(', ')}`,
      );
    const request = checkApiKeyRequest(body as { name: unknown });
    const owner = await ownerOf(ctx, body.username, services);
    const created = await createApiKey(services.db, owner.id, request, services.config.auth.api_keys_per_user);
    noteAudit(ctx, { details: { key_id: created.id, name: created.name, user_id: owner.id, scope: created.scope } });
    services.log.info('api key created', { request_id: ctx.state.requestId, by: ctx.state.caller.id, user_id: owner.id, key_id: created.id });
    sendData(ctx, { key: created.key, id: created.id, name: created.name, scope: created.scope, expires_at: created.expires_at }, 201);
  };
}

/** GET {base}/auth/api-keys[?username=U]: the keys of the caller (or, for an admin, of U); never a key. */
function list(services: ApiKeyServices): Stage<SessionAuthenticatedState> {
  return async (ctx) => {
    const owner = await ownerOf(ctx, ctx.query.username, services);
    sendData(ctx, { keys: await listApiKeys(services.db, owner.id) });
  };
}

/** DELETE {base}/auth/api-keys/{id}: refused at once here, within sessions.cache_ttl everywhere. */
function revoke(services: ApiKeyServices): Stage<SessionAuthenticatedState> {
  return async (ctx) => {
    const { caller } = ctx.state;
    const id = (ctx as unknown as { params: { id: string } }).params.id;
    const admin = caller.power >= services.config.auth.admin_power;
    const revoked = await revokeApiKey(services.db, id, admin ? undefined : caller.id);
    services.apiKeys.forget(revoked.keyHash);
    noteAudit(ctx, { details: { key_id: revoked.id, user_id: revoked.user_id } });
    services.log.info('api key revoked', { request_id: ctx.state.requestId, by: caller.id, user_id: revoked.user_id, key_id: revoked.id });
    sendData(ctx, { revoked: true });
  };
}

/**
 * The API key routes (docs/api-keys.md) for the one router (http/routes.ts). Only a session manages keys:
 * a key gets 403 (authenticate).
 */
export function apiKeyRoutes(services: ApiKeyServices): RouteContribution {
  const body = readJsonObjectBody(services.config.server.max_body_bytes, services.config.server.body_timeout_ms);
  const chain = () => StageList.start().then('authenticate', authenticate(services, { countsAsUse: true }));
  // Creating and revoking a key are recorded in the audit trail (docs/audit.md, "What is recorded"); listing is not.
  const audited = (action: string) => auditedAction(services.audit, action, 'session', services.config.server.trust_proxy);
  return ({ base, add }) => {
    add(
      'POST',
      `${base}/auth/api-keys`,
      'auth/api-keys',
      ...chain().then('audit', audited('apikey_create')).then('body', body).then('create', create(services)).middleware,
    );
    add('GET', `${base}/auth/api-keys`, 'auth/api-keys', ...chain().then('list', list(services)).middleware);
    add(
      'DELETE',
      `${base}/auth/api-keys/:id`,
      'auth/api-keys/:id',
      ...chain().then('audit', audited('apikey_revoke')).then('revoke', revoke(services)).middleware,
    );
  };
}
