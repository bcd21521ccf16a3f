import Koa from 'koa';
import { apiKeyRoutes } from './auth/api-key-routes.js';
import { adminAuditRoutes } from './audit/admin-audit-route.js';
import { authRoutes } from './auth/auth-routes.js';
import { oidcRoutes } from './auth/oidc/oidc-routes.js';
import type { AuthServices } from './auth/auth-services.js';
import { internalError, notFound } from './errors.js';
import type { Logger } from './log.js';
import type { GatewayMiddleware, GatewayState } from './http/context.js';
import { directContextAccessors } from './http/context-accessors.js';
import { GatewayKoa } from './http/gateway-koa.js';
import { cors } from './http/cors.js';
import { errorEnvelope, sendError } from './http/error-envelope.js';
import { respond, type BodyStreamWatch } from './http/respond.js';
import { assignRequestId } from './http/request-id.js';
import { respondAtTurnEnd } from './http/respond-at-turn-end.js';
import { gatewayRouter, type RouteContribution } from './http/routes.js';
import type { MiddlewareAt } from './http/stage.js';
import { openApiRoutes } from './openapi/openapi-route.js';
import { healthRoutes, type ReadinessState } from './ops/health.js';
import { requestLog } from './ops/request-log.js';
import { toolkitRoutes, type PipelineServices } from './pipeline/toolkit-routes.js';
import { choicesRoutes } from './pipeline/choices-route.js';
import type { PluginMiddlewareSet } from './plugins/plugin-middleware.js';
import type { Tracing } from './tracing/request-trace.js';
import { runRoutes } from './runs/run-routes.js';
import { notificationRoutes } from './notifications/notification-routes.js';
import type { Notifications } from './notifications/notifications.js';
import { consoleRoutes } from './console/console-routes.js';
import { scheduleRoutes } from './schedules/schedule-routes.js';
import type { Schedules } from './schedules/schedules.js';

export type AppServices = AuthServices &
  PipelineServices & {
    readiness: ReadinessState;
    /** Middleware plugins put at named points (plugins/plugin-middleware.ts); none when absent. */
    pluginMiddleware?: PluginMiddlewareSet;
    /** Each request's trace (tracing/tracing.ts). */
    tracing: Tracing;
    /** Routes of other domains, added after the core's (OIDC, API keys, admin). */
    routes?: readonly RouteContribution[];
    /** The console's built files (console/console-routes.ts); undefined: resolve `@tkgate/console`. */
    consoleDir?: string | undefined;
    /** The schedules fired on this instance (schedules/); its routes answer from their store. */
    schedules?: Schedules;
    /** The gateway's notifications; undefined without sinks (the delivery log is still served). */
    notifications?: Notifications | undefined;
  };

const noSuchRoute: GatewayMiddleware = () => {
  throw notFound('not_found', 'no such route');
};

/**
 * A body stream a plugin's middleware set that fails before its first byte: 500 internal_error in the envelope
 * rather than a cut connection, and an error line naming the plugin (its cause stays in the log).
 */
function pluginStreamFailures(middleware: PluginMiddlewareSet, log: Logger): BodyStreamWatch {
  return (ctx, body) => {
    const owner = middleware.ownerOfStream(body);
    if (!owner) return undefined;
    return (err) => {
      log.error('plugin middleware body stream failed', { ...owner, request_id: ctx.state.requestId, path: ctx.path, err });
      if (ctx.res.headersSent) return false;
      sendError(ctx, internalError(err));
      respond(ctx);
      return true;
    };
  };
}

/**
 * The Koa app: every request goes through this one stack, in this order. The access log and request
 * metrics around everything, responses batched per turn, the request id, CORS (when configured), the error
 * envelope, plugins' `request` middleware, then the one router (http/routes.ts) with each domain's routes,
 * and 404 for any other path. A toolkit request's nine steps are its route's middleware
 * (pipeline/toolkit-pipeline.ts). docs/architecture.md draws it.
 */
export function createApp(services: AppServices): Koa<GatewayState> {
  const { config, log } = services;
  const at: MiddlewareAt = (point) => (services.pluginMiddleware?.at(point) ?? []) as readonly GatewayMiddleware[];
  const app = new GatewayKoa();
  app.proxy = false;
  app.silent = true;
  directContextAccessors(app.context);
  app.watchBodyStream = services.pluginMiddleware && pluginStreamFailures(services.pluginMiddleware, log);
  app.use(requestLog({ log, metrics: services.metrics, access: config.log.access, trustProxy: config.server.trust_proxy }));
  app.use(respondAtTurnEnd);
  app.use(assignRequestId(services.tracing));
  const corsHeaders = cors(config.server.cors.origins, new Set([`${config.server.base_url}/auth/oidc/exchange`]));
  if (corsHeaders) app.use(corsHeaders);
  app.use(errorEnvelope(log, services.secretMask));
  for (const middleware of at('request')) app.use(middleware);
  const contributions = [
    healthRoutes(services.db, services.readiness, log),
    authRoutes(services),
    oidcRoutes(services),
    apiKeyRoutes(services),
    openApiRoutes(services),
    adminAuditRoutes(services),
    runRoutes({ ...services, reads: services.runs.store, feeds: services.runs.feeds, commands: services.runs.commands, nodes: services.runs.nodes }),
    scheduleRoutes(services),
    notificationRoutes(services),
    consoleRoutes(services),
    choicesRoutes(services),
    toolkitRoutes(services, at),
    ...(services.routes ?? []),
  ];
  app.use(gatewayRouter(config.server.base_url, contributions));
  app.use(noSuchRoute);
  return app;
}
