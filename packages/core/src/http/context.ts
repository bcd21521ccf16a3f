import type Koa from 'koa';
import type { RequestTrace } from '../tracing/request-trace.js';

/**
 * What every request's state holds, whatever its route: the request id, the route's template, and who
 * called once authentication knows it (the access line's user_id). Each domain widens it with its own
 * stages (pipeline/pipeline-state.ts for toolkit requests), so this type names no domain.
 */
export interface GatewayState {
  requestId: string;
  /** The request's W3C trace (tracing/request-trace.ts), set with the request id. */
  trace: RequestTrace;
  /** The route's template for logs and metrics (`auth/login`, `tk/app/notes/list`); unset: `other`. */
  route?: string;
  /** Set by authentication (auth/authenticate.ts): the calling user. */
  caller?: { readonly id: number };
}

export type GatewayContext<State extends GatewayState = GatewayState> = Koa.ParameterizedContext<State>;
export type GatewayMiddleware<State extends GatewayState = GatewayState> = Koa.Middleware<State>;
