import { applyWrapping } from '../toolkits/wrapping-rules.js';
import type { PipelineStep } from './pipeline-step.js';

/** Step 8: overwrite_wrapping: `-field` removes a top-level field, `name` moves db_context.name up. */
export const wrappingStep: PipelineStep = (ctx) => {
  ctx.state.requestContext = applyWrapping(ctx.state.requestContext!, ctx.state.endpoint!.wrapping);
};
