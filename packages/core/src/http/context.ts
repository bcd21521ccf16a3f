import type Koa from 'koa';
import type { RequestContext } from '../plugins/plugin-api.js';
import type { Session } from '../sessions/session.js';
import type { CompiledEndpoint, CompiledToolkit } from '../toolkits/compiled-toolkit.js';
import type { CallerRecord } from '../users/user-directory.js';

/** What the middleware stack learns about a request, in the order it learns it. */
export interface GatewayState {
  requestId: string;
  /** The route's template for logs and metrics (`auth/login`, `tk/app/notes/list`); unset: `other`. */
  route?: string;
  session?: Session;
  caller?: CallerRecord;
  /** Toolkit pipeline, step by step (see pipeline/toolkit-pipeline.ts): the URL's parts, then what they name. */
  address?: { kind: string; toolkit: string; endpointPath: string };
  toolkit?: CompiledToolkit;
  endpoint?: CompiledEndpoint;
  /** Ends the request's count on its endpoint version (step 2); called once its answer is out. */
  leaveEndpoint?: () => void;
  payload?: Record<string, unknown>;
  dbContext?: Record<string, unknown>;
  toolkitGroup?: string | null;
  requestContext?: RequestContext;
}

export type GatewayContext = Koa.ParameterizedContext<GatewayState>;
export type GatewayMiddleware = Koa.Middleware<GatewayState>;
