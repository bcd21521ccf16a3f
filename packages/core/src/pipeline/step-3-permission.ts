import type { AuthenticatedState } from '../auth/authenticate.js';
import { forbidden } from '../errors.js';
import type { Stage } from '../http/stage.js';
import type { EndpointFound } from './pipeline-state.js';

/** Step 3: the caller's power (read fresh this request) reaches the endpoint's min_power, else 403. */
export const permissionStep: Stage<AuthenticatedState & EndpointFound> = (ctx, next) => {
  const { minPower } = ctx.state.endpoint;
  if (ctx.state.caller.power < minPower) throw forbidden(`this endpoint needs power ${minPower}`);
  return next();
};
