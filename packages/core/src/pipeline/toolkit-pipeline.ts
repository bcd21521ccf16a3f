import type { JwtIssuers } from '../auth/jwt/jwt-issuers.js';
import type { InternalCaller, InternalCalls } from '../auth/internal-calls.js';
import type { FieldChoices } from '../parameters/index.js';
import type { SecretMask } from '../secrets/secret-mask.js';
import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { authenticateSessionOrKey } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { GatewayMiddleware } from '../http/context.js';
import { StageList, type MiddlewareAt, type Stage } from '../http/stage.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { CompiledToolkit } from '../toolkits/compiled-toolkit.js';
import { routeName } from '../toolkits/route-match.js';
import { auditCallStep } from './audit-call-step.js';
import type { AddressedState } from './pipeline-state.js';
import { toolkitStep } from './step-1-toolkit.js';
import { routeStep } from './step-2-route.js';
import type { RateLimitCounters } from '../rate-limits/rate-limit-counters.js';
import { rateLimitStep } from './rate-limit.js';
import { permissionStep } from './step-3-permission.js';
import { payloadFilterStep } from './step-4-payload-filter.js';
import { dbContextStep } from './step-5-db-context.js';
import { groupStep } from './step-6-group.js';
import { contextStep } from './step-7-context.js';
import { wrappingStep } from './step-8-wrapping.js';
import { executeStep } from './step-9-execute.js';
import { StreamEnds } from '../upgrade/stream-ends.js';
import { Upgrades } from '../upgrade/upgrades.js';
import { runStep } from './run-step.js';
import type { Runs } from '../runs/runs.js';
import type { Triggers } from '../triggers/triggers.js';
import { signedOr, triggerStep } from './trigger-step.js';

export interface PipelineServices {
  config: ServerConfig;
  db: Database;
  reads: PreparedReads;
  log: Logger;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  jwtIssuers: JwtIssuers;
  /** The gateway's calls of its own endpoints (schedules' fires, choices, reruns): authenticated by their request object. */
  internalCalls?: InternalCalls;
  registry: ToolkitRegistry;
  metrics: GatewayMetrics;
  /** The audit trail: audited endpoints' calls are written to it (audit-call-step.ts). */
  audit: AuditTrail;
  /** Where rate-limit budgets are counted (rate_limits.store). */
  rateLimitCounters: RateLimitCounters;
  /** Runs: endpoints that run as jobs are recorded and answered 202 instead of step 9. */
  runs: Runs;
  /** Fields' choices (choices_from), asked of their endpoints as the caller through internalCalls. */
  fieldChoices: FieldChoices<InternalCaller>;
  /** The gateway's mask of secret values (never in an error answer): secret fields' values join it (parameters/secret-fields.ts). */
  secretMask: SecretMask;
  /** Signed triggers: endpoints with `trigger` take calls without a credential, verified by their signature. */
  triggers: Triggers;
}

/**
 * Every toolkit request, in order: the route's name, 401, then the seed's nine steps, each Koa middleware
 * `(ctx, next)` in a module of its own; plugins' middleware goes in at the named points (`at`, see
 * docs/plugins.md). Reading this list is reading the flow; the types check that each step comes after
 * the ones whose state it reads.
 */
export function toolkitPipeline(s: PipelineServices, at: MiddlewareAt): readonly GatewayMiddleware[] {
  const streamEnds = new StreamEnds(s, Math.min(Math.max(s.config.sessions.cache_ttl_ms, 100), 1000), s.log);
  const upgrades = new Upgrades(s.config.websocket.max_per_user, streamEnds);
  const execute = { db: s.db, log: s.log, trustProxy: s.config.server.trust_proxy, metrics: s.metrics, upgrades };
  const audit = { trail: s.audit, required: s.config.audit.required, trustProxy: s.config.server.trust_proxy };
  const rateLimits = {
    counters: s.rateLimitCounters,
    onStoreFailure: s.config.rate_limits.on_store_failure,
    trustProxy: s.config.server.trust_proxy,
    log: s.log,
    metrics: s.metrics,
  };
  const parameters = { choices: s.fieldChoices, mask: s.secretMask };
  const authenticate = authenticateSessionOrKey(s, { countsAsUse: true });
  const triggers = { triggers: s.triggers, server: s.config.server, log: s.log };
  // The aligned columns are the table of steps and their answers: kept as written.
  // prettier-ignore
  return StageList.start<AddressedState>(at)
    .then('name-route', nameRoute(s.registry))                                 //    the route template for logs and metrics, known before 401
    .point('before:authenticate')                                              //    plugins' middleware
    .then('authenticate', signedOr(s.registry, s.internalCalls, authenticate)) //    the caller (or a signed call: below) 401 unauthorized
    .then('toolkit', toolkitStep(s.registry))                                  // 1. toolkit exists and is enabled   404 toolkit_not_found
    .then('route', routeStep(s.registry.lifetimes))                            // 2. endpoint path and method        404 endpoint_not_found, 405
    .then('trigger', triggerStep(triggers))                                    //    a signed call: docs/triggers.md  401 invalid_signature, 200 ignored
    .then('permission', permissionStep)                                        // 3. power >= min_power, key scope    403 forbidden
    .then('rate-limit', rateLimitStep(rateLimits))                             //    rate_limit: docs/rate-limits.md 429 rate_limited, 503 unavailable
    .then('payload-filter', payloadFilterStep(s.config.server, parameters))    // 4. client_filter, choices_from     400 invalid_payload, 502 choices_failed
    .then('db-context', dbContextStep(s.db, s.reads))                          // 5. inject_db_context               500 db_context_failed
    .then('group', groupStep(s.db, s.reads))                                   // 6. toolkit group
    .then('context', contextStep)                                              // 7. request context
    .then('wrapping', wrappingStep)                                            // 8. overwrite_wrapping
    .point('before:execute')                                                   //    plugins' middleware
    .then('audit', auditCallStep(audit))                                       //    an audited call's event written  503 unavailable (audit.required)
    .then('run', runStep(s.runs, s.config.server.base_url))                    //    a detached endpoint: its run recorded 202; 503 busy (queue full)
    .then('execute', executeStep(execute))                                     // 9. the endpoint type's plugin      its own errors
    .middleware;
}

/** Endpoint paths whose route names one toolkit version keeps: template endpoints' paths are as many as their callers send. */
const MAX_NAMED_PATHS = 1000;

/** A path's route (`tk/<kind>/<toolkit>/<endpoint path>`) and endpoint path as written, or null: no live endpoint. */
type NamedRoute = { route: string; path: string } | null;

/**
 * `tk/<kind>/<toolkit>/<endpoint path>` (a template as written) when the URL names a live endpoint (and the trace's
 * toolkit and endpoint); else the route stays `other`. Kept per toolkit version and path: the name built and
 * matched on every call was a string and an iterator or two per request.
 */
function nameRoute(registry: ToolkitRegistry): Stage<AddressedState> {
  const named = new WeakMap<CompiledToolkit, Map<string, NamedRoute>>();
  const nameOf = (toolkit: CompiledToolkit, kind: string, endpointPath: string): NamedRoute => {
    let paths = named.get(toolkit);
    if (!paths) named.set(toolkit, (paths = new Map()));
    let known = paths.get(endpointPath);
    if (known === undefined) {
      const path = routeName(toolkit, endpointPath);
      known = path === undefined ? null : { route: `tk/${kind}/${toolkit.name}/${path}`, path };
      if (paths.size < MAX_NAMED_PATHS) paths.set(endpointPath, known);
    }
    return known;
  };
  return (ctx, next) => {
    const { kind, toolkit: name, endpointPath } = ctx.state.address;
    const toolkit = registry.snapshot.get(name);
    const known = toolkit && toolkit.kind === kind ? nameOf(toolkit, kind, endpointPath) : null;
    if (known) {
      ctx.state.route = known.route;
      if (ctx.state.trace.recording) ctx.state.trace.describe({ 'tkgate.toolkit': name, 'tkgate.endpoint': known.path });
    }
    return next();
  };
}
