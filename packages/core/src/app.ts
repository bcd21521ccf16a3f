import Koa from 'koa';
import { authRoutes } from './auth/auth-routes.js';
import type { AuthServices } from './auth/auth-services.js';
import { notFound } from './errors.js';
import type { GatewayMiddleware, GatewayState } from './http/context.js';
import { cors } from './http/cors.js';
import { errorEnvelope } from './http/error-envelope.js';
import { assignRequestId } from './http/request-id.js';
import { respondAtTurnEnd } from './http/respond-at-turn-end.js';
import { openApiRoutes } from './openapi/openapi-route.js';
import { toolkitRoutes, type PipelineServices } from './pipeline/toolkit-pipeline.js';

export type AppServices = AuthServices & PipelineServices;

const noSuchRoute: GatewayMiddleware = async () => {
  throw notFound('not_found', 'no such route');
};

/** The Koa app: responses batched per turn, request id, CORS (when configured), the error envelope around everything, then the auth and toolkit routes. */
export function createApp(services: AppServices): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  app.proxy = false;
  app.silent = true;
  app.use(respondAtTurnEnd);
  app.use(assignRequestId);
  const corsHeaders = cors(services.config.server.cors.origins);
  if (corsHeaders) app.use(corsHeaders);
  app.use(errorEnvelope(services.log));
  app.use(authRoutes(services).routes());
  app.use(toolkitRoutes(services).routes());
  app.use(openApiRoutes(services).routes());
  app.use(noSuchRoute);
  return app;
}
