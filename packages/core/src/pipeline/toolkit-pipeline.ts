import { authenticate } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { GatewayContext, GatewayMiddleware } from '../http/context.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { UserDirectory } from '../users/user-directory.js';
import { runSteps, type PipelineStep } from './pipeline-step.js';
import { toolkitStep } from './step-1-toolkit.js';
import { leaveEndpoint, routeStep } from './step-2-route.js';
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
export function toolkitPipeline(s: PipelineServices): PipelineStep[] {
  // The aligned columns are the table of steps and their answers: kept as written.
  // prettier-ignore
  return [
    nameRoute(s.registry), //            the route template for logs and metrics, known before 401
    authenticate(s.sessions, { countsAsUse: true }), //                        401 unauthorized
    toolkitStep(s.registry), //          1. toolkit exists and is enabled       404 toolkit_not_found
    routeStep(s.registry.lifetimes), //  2. endpoint path and method            404 endpoint_not_found, 405
    permissionStep, //                   3. caller's power >= min_power         403 forbidden
    payloadFilterStep(s.config.server.max_body_bytes, s.config.server.body_timeout_ms), // 4. client_filter     400 invalid_payload
    dbContextStep(s.db, s.reads), //     5. inject_db_context                   500 db_context_failed
    groupStep(s.db, s.reads), //         6. toolkit group
    contextStep, //                      7. request context
    wrappingStep, //                     8. overwrite_wrapping
    executeStep({ db: s.db, log: s.log, trustProxy: s.config.server.trust_proxy, metrics: s.metrics }), // 9. the endpoint type's plugin          its own errors
  ];
}

/** `tk/<kind>/<toolkit>/<endpoint path>` when the URL names a live endpoint; else the route stays `other`. */
function nameRoute(registry: ToolkitRegistry): PipelineStep {
  return (ctx) => {
    const { kind, toolkit: name, endpointPath } = ctx.state.address!;
    const toolkit = registry.snapshot.get(name);
    if (toolkit && toolkit.kind === kind && toolkit.routes.has(endpointPath)) ctx.state.route = `tk/${kind}/${name}/${endpointPath}`;
  };
}

/**
 * {base}/tk/<kind>/<toolkit>[/<endpoint path>]: the address in a URL's path, split once (the endpoint path
 * without a trailing slash); undefined for any other path, which the next routes answer.
 */
export function toolkitAddress(path: string, prefix: string): GatewayContext['state']['address'] {
  if (!path.startsWith(prefix)) return undefined;
  const kindEnd = path.indexOf('/', prefix.length);
  if (kindEnd <= prefix.length) return undefined;
  const toolkitEnd = path.indexOf('/', kindEnd + 1);
  const toolkit = toolkitEnd === -1 ? path.slice(kindEnd + 1) : path.slice(kindEnd + 1, toolkitEnd);
  if (toolkit === '') return undefined;
  const endpointPath = toolkitEnd === -1 ? '' : path.slice(toolkitEnd + 1).replace(/\/$/, '');
  return { kind: path.slice(prefix.length, kindEnd), toolkit, endpointPath };
}

/** `{base}/tk/`: where toolkit addresses begin. */
export const toolkitPrefix = (services: PipelineServices): string => `${services.config.server.base_url}/tk/`;

/**
 * A request to a toolkit address (ctx.state.address set): the pipeline's steps, then, whichever way they
 * end, the request leaves its endpoint version (step 2).
 */
export function toolkitRequest(services: PipelineServices): (ctx: GatewayContext) => void | Promise<void> {
  const run = runSteps(toolkitPipeline(services));
  return (ctx) => {
    let running;
    try {
      running = run(ctx);
    } catch (err) {
      leaveEndpoint(ctx);
      throw err;
    }
    if (!running) return leaveEndpoint(ctx);
    return running.finally(() => leaveEndpoint(ctx));
  };
}

/** The toolkit routes as one Koa middleware: a toolkit address runs toolkitRequest; any other path goes on. */
export function toolkitRoutes(services: PipelineServices): GatewayMiddleware {
  const prefix = toolkitPrefix(services);
  const request = toolkitRequest(services);
  return (ctx, next) => {
    const address = toolkitAddress(ctx.path, prefix);
    if (!address) return next();
    ctx.state.address = address;
    return request(ctx);
  };
}
