import type { PipelineStep } from './pipeline-step.js';

/** Step 7: the request context of the seed's section 2.2, exactly these fields. */
export const contextStep: PipelineStep = (ctx) => {
  const caller = ctx.state.caller!;
  ctx.state.requestContext = {
    user_id: caller.id,
    username: caller.username,
    power: caller.power,
    core_group_id: caller.core_group_id,
    core_group_name: caller.core_group_name,
    toolkit_group: ctx.state.toolkitGroup ?? null,
    request_id: ctx.state.requestId,
    payload: ctx.state.payload!,
    db_context: ctx.state.dbContext!,
  };
};
