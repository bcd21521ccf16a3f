import Koa from 'koa';
import { authRoutes } from './auth/auth-routes.js';
import { oidcRouter } from './auth/oidc/oidc-routes.js';
import type { AuthServices } from './auth/auth-services.js';
import { notFound } from './errors.js';
import type { GatewayMiddleware, GatewayState } from './http/context.js';
import { cors, corsPolicy } from './http/cors.js';
import { errorEnvelope } from './http/error-envelope.js';
import { assignRequestId } from './http/request-id.js';
import { respondAtTurnEnd } from './http/respond-at-turn-end.js';
import { openApiRoutes } from './openapi/openapi-route.js';
import { healthRoutes, type ReadinessState } from './ops/health.js';
import { requestLog, requestRecorder, type RequestLogOptions } from './ops/request-log.js';
import { directStatus } from './auth/direct-status.js';
import type { DirectAnswer } from './http/direct-answers.js';
import { directToolkit } from './pipeline/direct-toolkit.js';
import { toolkitRoutes, type PipelineServices } from './pipeline/toolkit-pipeline.js';

export type AppServices = AuthServices & PipelineServices & { readiness: ReadinessState };

const noSuchRoute: GatewayMiddleware = async () => {
  throw notFound('not_found', 'no such route');
};

/**
 * The Koa app: the access log and request metrics around everything, responses batched per turn,
 * request id, CORS (when configured), /healthz and /readyz, the error envelope, then the routes.
 */
export function createApp(services: AppServices): Koa<GatewayState> {
  const { config, log } = services;
  const app = new Koa<GatewayState>();
  app.proxy = false;
  app.silent = true;
  app.use(requestLog(requestLogOptions(services)));
  app.use(respondAtTurnEnd);
  app.use(assignRequestId);
  const corsHeaders = cors(config.server.cors.origins);
  if (corsHeaders) app.use(corsHeaders);
  app.use(healthRoutes(services.db, services.readiness, log));
  app.use(errorEnvelope(log));
  app.use(toolkitRoutes(services));
  app.use(authRoutes(services));
  app.use(openApiRoutes(services).routes());
  app.use(oidcRouter(services).routes());
  app.use(noSuchRoute);
  return app;
}

/**
 * The answers given before Koa's stack sees a request (http/direct-answers.ts): a status call with a cached
 * session, and toolkit requests (the same steps, on a Koa context of their own).
 */
export function createDirectAnswers(services: AppServices, app: Koa<GatewayState>): DirectAnswer[] {
  const { config, sessions } = services;
  const record = requestRecorder(requestLogOptions(services));
  const cors = corsPolicy(config.server.cors.origins);
  return [directStatus({ baseUrl: config.server.base_url, sessions, record, cors }), directToolkit({ app, services, record, cors })];
}

function requestLogOptions({ config, log, metrics }: AppServices): RequestLogOptions {
  return { log, metrics, access: config.log.access, trustProxy: config.server.trust_proxy, baseUrl: config.server.base_url };
}
