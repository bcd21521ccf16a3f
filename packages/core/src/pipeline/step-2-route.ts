import { Readable } from 'node:stream';
import { methodNotAllowed, notFound } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { EndpointLifetimes } from '../toolkits/endpoint-lifetimes.js';
import { matchRoute } from '../toolkits/route-match.js';
import type { AddressedState, EndpointFound, ToolkitFound } from './pipeline-state.js';

type RoutedState = AddressedState & ToolkitFound & EndpointFound;

/**
 * Step 2: the path after the toolkit name names an endpoint (else 404 endpoint_not_found) that takes this
 * method (else 405): an exact path, else a template (route-match.ts), whose parameters as received step 4 decodes. The request counts as in flight on that endpoint version until its answer is out
 * (leaveEndpoint, once the steps after this one are over, whichever way), so a plugin hears of the
 * version's retirement (onRetire) only after its last request.
 */
export function routeStep(lifetimes: EndpointLifetimes): Stage<AddressedState & ToolkitFound, EndpointFound> {
  return (ctx, next) => {
    const { toolkit, address } = ctx.state;
    const match = matchRoute(toolkit, address.endpointPath, ctx.method);
    if (!match) throw notFound('endpoint_not_found', `toolkit ${toolkit.name} has no endpoint ${address.endpointPath || '(empty path)'}`);
    if ('allowed' in match) throw methodNotAllowed([...match.allowed]);
    const state = ctx.state as RoutedState;
    state.endpoint = match.endpoint;
    if (match.path) state.pathMatch = match.path;
    const endpoint = match.endpoint;
    state.leaveEndpoint = lifetimes.enter(endpoint);
    const leave = () => leaveEndpoint(ctx as GatewayContext<RoutedState>);
    return next().then(leave, (err: unknown) => {
      leave();
      throw err;
    });
  };
}

/** The request leaves its endpoint version now, or, when a streamed body is still being sent (still the endpoint's work), once it is. */
function leaveEndpoint(ctx: GatewayContext<RoutedState>): void {
  const leave = ctx.state.leaveEndpoint;
  if (!leave) return;
  ctx.state.leaveEndpoint = undefined;
  if (ctx.body instanceof Readable && !ctx.res.writableFinished && !ctx.res.destroyed) ctx.res.once('close', leave);
  else leave();
}
