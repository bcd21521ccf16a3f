import type { AuthenticatedState } from '../auth/authenticate.js';
import type { Stage } from '../http/stage.js';
import type { ContextMade, DbContextRead, GroupFound, PayloadFiltered } from './pipeline-state.js';

/** Step 7: the request context of the seed's section 2.2, exactly these fields. */
export const contextStep: Stage<AuthenticatedState & PayloadFiltered & DbContextRead & GroupFound, ContextMade> = (ctx, next) => {
  const { caller, toolkitGroup, requestId, payload, dbContext } = ctx.state;
  (ctx.state as typeof ctx.state & ContextMade).requestContext = {
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
  return next();
};
