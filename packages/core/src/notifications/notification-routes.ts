import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import { authenticate, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import { forbidden, notFound } from '../errors.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { SessionStore } from '../sessions/session-store.js';
import { listDeliveries, redeliver } from './notification-commands.js';
import type { Notifications } from './notifications.js';

export interface NotificationRouteServices {
  config: ServerConfig;
  db: Database;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  /** The gateway's notifications (undefined without sinks): a redeliver wakes its deliverer. */
  notifications?: Notifications | undefined;
}

/**
 * `GET {base}/admin/notifications?status=&sink=&event=&limit=&cursor=` (the delivery log, newest first, each
 * delivery with its attempts) and `POST {base}/admin/notifications/{id}/redeliver` (202: the same event, the same
 * `webhook-id`), for callers with auth.admin_power. `tkgate notifications` runs the same commands.
 */
export function notificationRoutes({ config, db, sessions, apiKeys, notifications }: NotificationRouteServices): RouteContribution {
  const adminOnly: Stage<AuthenticatedState> = (ctx, next) => {
    if (ctx.state.caller.power < config.auth.admin_power) throw forbidden(`the notification log needs power ${config.auth.admin_power}`);
    return next();
  };
  const list: Stage<AuthenticatedState> = async (ctx) => {
    sendData(ctx, await listDeliveries(db, ctx.query));
  };
  const again: Stage<AuthenticatedState> = async (ctx) => {
    const id = (ctx as unknown as { params: Record<string, string> }).params.id!;
    const delivery = await redeliver(db, id);
    if (!delivery) throw notFound('delivery_not_found', 'no such notification delivery');
    notifications?.wake();
    sendData(ctx, delivery, 202);
  };
  const start = () =>
    StageList.start()
      .then('authenticate', authenticate({ sessions, apiKeys }, { countsAsUse: true }))
      .then('admin', adminOnly);
  return ({ base, add }) => {
    add('GET', `${base}/admin/notifications`, 'admin/notifications', ...start().then('list', list).middleware);
    add('POST', `${base}/admin/notifications/:id/redeliver`, 'admin/notifications/redeliver', ...start().then('redeliver', again).middleware);
  };
}
