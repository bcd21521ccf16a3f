import { authenticate, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import { forbidden } from '../errors.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { SessionStore } from '../sessions/session-store.js';
import { parseAuditFilters, queryAuditEvents, type AuditFilterText } from './audit-query.js';

export interface AdminAuditServices {
  config: ServerConfig;
  db: Database;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
}

const FILTERS = ['user', 'toolkit', 'action', 'since', 'until', 'limit', 'cursor'] as const;

/** The query string's filters; a parameter given twice is its first value. */
function filterText(query: Record<string, string | string[] | undefined>): AuditFilterText {
  const text: AuditFilterText = {};
  for (const name of FILTERS) {
    const value = query[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) text[name] = first;
  }
  return text;
}

/**
 * GET {base}/admin/audit?user=&toolkit=&action=&since=&until=&limit=&cursor=: a page of the audit trail, newest
 * first, for callers with auth.admin_power (checked before the query is read: 403 forbidden); a bad parameter is
 * 400 invalid_payload naming it. `data`: {events, next_cursor}.
 */
export function adminAuditRoutes({ config, db, sessions, apiKeys }: AdminAuditServices): RouteContribution {
  const adminOnly: Stage<AuthenticatedState> = (ctx, next) => {
    if (ctx.state.caller.power < config.auth.admin_power) throw forbidden(`the audit trail needs power ${config.auth.admin_power}`);
    return next();
  };
  const list: Stage<AuthenticatedState> = async (ctx) => {
    const filters = parseAuditFilters(filterText(ctx.query));
    sendData(ctx, await queryAuditEvents(db, filters));
  };
  const chain = StageList.start()
    .then('authenticate', authenticate({ sessions, apiKeys }, { countsAsUse: true }))
    .then('admin', adminOnly)
    .then('list', list);
  return ({ base, add }) => add('GET', `${base}/admin/audit`, 'admin/audit', ...chain.middleware);
}
