import type { AuthenticatedState } from '../auth/authenticate.js';
import type { Stage } from '../http/stage.js';
import type { ContextMade, DbContextRead, GroupFound, PayloadFiltered } from './pipeline-state.js';

/** Step 7: the request context of the seed's section 2.2, exactly these fields, and a template endpoint's `path_params`. */
export const contextStep: Stage<AuthenticatedState & PayloadFiltered & DbContextRead & GroupFound, ContextMade> = (ctx, next) => {
  const { caller, toolkitGroup, requestId, payload, dbContext, pathParams } = ctx.state;
  const context: ContextMade['requestContext'] = {
    user_id: caller.id,
    username: caller.username,
    power: caller.power,
    core_group_id: caller.core_group_id,
    core_group_name: caller.core_group_name,
    toolkit_group: toolkitGroup,
    request_id: requestId,
    payload,
    db_context: dbContext,
  };
  // A template endpoint's only: an exact path's context stays the seed's fields.
  if (pathParams) context.path_params = pathParams;
  (ctx.state as typeof ctx.state & ContextMade).requestContext = context;
  return next();
};
