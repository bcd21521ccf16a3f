import { Readable } from 'node:stream';
import { methodNotAllowed, notFound } from '../errors.js';
import type { GatewayContext, GatewayMiddleware } from '../http/context.js';
import type { EndpointLifetimes } from '../toolkits/endpoint-lifetimes.js';
import type { CompiledToolkit } from '../toolkits/compiled-toolkit.js';

/** The part of the request path after {base}/tk/<kind>/<toolkit>/, without a trailing slash. */
export function endpointPathOf(ctx: GatewayContext, basePath: string, toolkit: CompiledToolkit): string {
  const prefix = `${basePath}/tk/${toolkit.kind}/${toolkit.name}/`;
  return ctx.path.startsWith(prefix) ? ctx.path.slice(prefix.length).replace(/\/$/, '') : '';
}

/**
 * Step 2: the path after the toolkit name names an endpoint (else 404 endpoint_not_found) that takes this
 * method (else 405). The request counts as in flight on that endpoint version until its answer is out,
 * so a plugin hears of the version's retirement (onRetire) only after its last request.
 */
export function routeStep(basePath: string, lifetimes: EndpointLifetimes): GatewayMiddleware {
  return async (ctx, next) => {
    const toolkit = ctx.state.toolkit!;
    const endpointPath = endpointPathOf(ctx, basePath, toolkit);
    const byMethod = toolkit.routes.get(endpointPath);
    if (!byMethod) throw notFound('endpoint_not_found', `toolkit ${toolkit.name} has no endpoint ${endpointPath || '(empty path)'}`);
    const endpoint = byMethod.get(ctx.method);
    if (!endpoint) throw methodNotAllowed([...byMethod.keys()]);
    ctx.state.endpoint = endpoint;
    const leave = lifetimes.enter(endpoint);
    try {
      await next();
    } finally {
      leaveWhenAnswered(ctx, leave);
    }
  };
}

/** A streamed body is still the endpoint's work after the middleware returns: leave once it is sent. */
function leaveWhenAnswered(ctx: GatewayContext, leave: () => void): void {
  if (ctx.body instanceof Readable && !ctx.res.writableFinished && !ctx.res.destroyed) ctx.res.once('close', leave);
  else leave();
}
