import { machineScope, type AuthenticatedState } from '../auth/authenticate.js';
import { forbidden } from '../errors.js';
import type { Stage } from '../http/stage.js';
import type { EndpointFound, ToolkitFound } from './pipeline-state.js';

/**
 * Step 3: the caller's power (read fresh this request) reaches the endpoint's min_power, and an API key's
 * scope (null: every toolkit) holds the toolkit; else 403.
 */
export const permissionStep: Stage<AuthenticatedState & ToolkitFound & EndpointFound> = (ctx, next) => {
  const { minPower } = ctx.state.endpoint;
  if (ctx.state.caller.power < minPower) throw forbidden(`this endpoint needs power ${minPower}`);
  const scope = machineScope(ctx.state);
  if (scope && !scope.has(ctx.state.toolkit.name))
    throw forbidden(`this ${ctx.state.jwt ? 'workload token' : 'API key'}'s scope does not include the toolkit ${ctx.state.toolkit.name}`);
  return next();
};
