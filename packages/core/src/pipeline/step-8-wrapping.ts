import type { GatewayMiddleware } from '../http/context.js';
import { applyWrapping } from '../toolkits/wrapping-rules.js';

/** Step 8: overwrite_wrapping: `-field` removes a top-level field, `name` moves db_context.name up. */
export const wrappingStep: GatewayMiddleware = async (ctx, next) => {
  ctx.state.requestContext = applyWrapping(ctx.state.requestContext!, ctx.state.endpoint!.wrapping);
  await next();
};
