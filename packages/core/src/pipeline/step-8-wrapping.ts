import type { GatewayState } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import { applyWrapping } from '../toolkits/wrapping-rules.js';
import type { ContextMade, EndpointFound } from './pipeline-state.js';

/** Step 8: overwrite_wrapping: `-field` removes a top-level field, `name` moves db_context.name up. */
export const wrappingStep: Stage<GatewayState & EndpointFound & ContextMade> = (ctx, next) => {
  ctx.state.requestContext = applyWrapping(ctx.state.requestContext, ctx.state.endpoint.wrapping);
  return next();
};
