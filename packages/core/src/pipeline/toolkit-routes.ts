import compose from 'koa-compose';
import type { GatewayMiddleware, GatewayState } from '../http/context.js';
import type { RouteContribution } from '../http/routes.js';
import type { MiddlewareAt } from '../http/stage.js';
import type { AddressedState } from './pipeline-state.js';
import { toolkitPipeline, type PipelineServices } from './toolkit-pipeline.js';

export type { PipelineServices };

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * {base}/tk/<kind>/<toolkit>[/<endpoint path>]: the address in a URL's path, split once (the endpoint path
 * without a trailing slash); undefined for any other path.
 */
export function toolkitAddress(path: string, prefix: string): AddressedState['address'] | undefined {
  if (!path.startsWith(prefix)) return undefined;
  const kindEnd = path.indexOf('/', prefix.length);
  if (kindEnd <= prefix.length) return undefined;
  const toolkitEnd = path.indexOf('/', kindEnd + 1);
  const toolkit = toolkitEnd === -1 ? path.slice(kindEnd + 1) : path.slice(kindEnd + 1, toolkitEnd);
  if (toolkit === '') return undefined;
  const endpointPath = toolkitEnd === -1 ? '' : path.slice(toolkitEnd + 1).replace(/\/$/, '');
  return { kind: path.slice(prefix.length, kindEnd), toolkit, endpointPath };
}

/**
 * The toolkit address as one pattern route, any method: its middleware reads the address from the path,
 * then runs the pipeline (toolkit-pipeline.ts), which names the route itself (a live endpoint's
 * `tk/<kind>/<toolkit>/<endpoint path>`, else `other`) and answers 405 per endpoint.
 */
export function toolkitRoutes(services: PipelineServices, at: MiddlewareAt): RouteContribution {
  const pipeline = compose(toolkitPipeline(services, at) as GatewayMiddleware[]);
  return ({ base, pattern }) => {
    const prefix = `${base}/tk/`;
    const request: GatewayMiddleware = (ctx, next) => {
      const address = toolkitAddress(ctx.path, prefix);
      if (!address) return next();
      (ctx.state as GatewayState & AddressedState).address = address;
      return pipeline(ctx);
    };
    pattern(new RegExp(`^${escapeRegExp(prefix)}[^/]+/[^/]`), request);
  };
}
