import Router from '@koa/router';
import { authenticate } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { GatewayMiddleware, GatewayState } from '../http/context.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { UserDirectory } from '../users/user-directory.js';
import { toolkitStep } from './step-1-toolkit.js';
import { endpointPathOf, routeStep } from './step-2-route.js';
import { permissionStep } from './step-3-permission.js';
import { payloadFilterStep } from './step-4-payload-filter.js';
import { dbContextStep } from './step-5-db-context.js';
import { groupStep } from './step-6-group.js';
import { contextStep } from './step-7-context.js';
import { wrappingStep } from './step-8-wrapping.js';
import { executeStep } from './step-9-execute.js';

export interface PipelineServices {
  config: ServerConfig;
  db: Database;
  reads: PreparedReads;
  log: Logger;
  sessions: SessionStore;
  users: UserDirectory;
  registry: ToolkitRegistry;
  metrics: GatewayMetrics;
}

/** Every toolkit request, in order: 401 first, then the seed's nine steps. Reading this list is reading the flow. */
export function toolkitPipeline(s: PipelineServices): GatewayMiddleware[] {
  return [
    nameRoute(s.registry, s.config.server.base_url), // the route template for logs and metrics, known before 401
    authenticate(s.sessions, { countsAsUse: true }),
    toolkitStep(s.registry), //          1. toolkit exists and is enabled       404 toolkit_not_found
    routeStep(s.config.server.base_url, s.registry.lifetimes), // 2. endpoint path and method   404 endpoint_not_found, 405
    permissionStep, //                   3. caller's power >= min_power         403 forbidden
    payloadFilterStep(s.config.server.max_body_bytes), // 4. client_filter     400 invalid_payload
    dbContextStep(s.db, s.reads), //     5. inject_db_context                   500 db_context_failed
    groupStep(s.db, s.reads), //         6. toolkit group
    contextStep, //                      7. request context
    wrappingStep, //                     8. overwrite_wrapping
    executeStep({ db: s.db, log: s.log, trustProxy: s.config.server.trust_proxy, metrics: s.metrics }), // 9. the endpoint type's plugin          its own errors
  ];
}

/** `tk/<kind>/<toolkit>/<endpoint path>` when the URL names a live endpoint; else the route stays `other`. */
function nameRoute(registry: ToolkitRegistry, basePath: string): GatewayMiddleware {
  return (ctx, next) => {
    const toolkit = registry.snapshot.get((ctx.params as { toolkit: string }).toolkit);
    if (toolkit && toolkit.kind === (ctx.params as { kind: string }).kind) {
      const path = endpointPathOf(ctx, basePath, toolkit);
      if (toolkit.routes.has(path)) ctx.state.route = `tk/${toolkit.kind}/${toolkit.name}/${path}`;
    }
    return next();
  };
}

/** {base}/tk/app/<toolkit>/<path> and {base}/tk/lib/<toolkit>/<path>. */
export function toolkitRoutes(services: PipelineServices): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: `${services.config.server.base_url}/tk` });
  router.all('/:kind/:toolkit{/*path}', ...toolkitPipeline(services));
  return router;
}
