import { Readable } from 'node:stream';
import { methodNotAllowed, notFound } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import type { EndpointLifetimes } from '../toolkits/endpoint-lifetimes.js';
import type { PipelineStep } from './pipeline-step.js';

/**
 * Step 2: the path after the toolkit name names an endpoint (else 404 endpoint_not_found) that takes this
 * method (else 405). The request counts as in flight on that endpoint version until its answer is out
 * (leaveEndpoint), so a plugin hears of the version's retirement (onRetire) only after its last request.
 */
export function routeStep(lifetimes: EndpointLifetimes): PipelineStep {
  return (ctx) => {
    const toolkit = ctx.state.toolkit!;
    const { endpointPath } = ctx.state.address!;
    const byMethod = toolkit.routes.get(endpointPath);
    if (!byMethod) throw notFound('endpoint_not_found', `toolkit ${toolkit.name} has no endpoint ${endpointPath || '(empty path)'}`);
    const endpoint = byMethod.get(ctx.method);
    if (!endpoint) throw methodNotAllowed([...byMethod.keys()]);
    ctx.state.endpoint = endpoint;
    ctx.state.leaveEndpoint = lifetimes.enter(endpoint);
  };
}

/**
 * Called once the pipeline is over, whichever way: the request leaves its endpoint version now, or, when
 * a streamed body is still being sent (still the endpoint's work), once it is.
 */
export function leaveEndpoint(ctx: GatewayContext): void {
  const leave = ctx.state.leaveEndpoint;
  if (!leave) return;
  ctx.state.leaveEndpoint = undefined;
  if (ctx.body instanceof Readable && !ctx.res.writableFinished && !ctx.res.destroyed) ctx.res.once('close', leave);
  else leave();
}
