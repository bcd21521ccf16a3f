import { methodNotAllowed } from '../errors.js';
import { runSteps, type PipelineStep } from '../pipeline/pipeline-step.js';
import type { GatewayMiddleware } from './context.js';

export interface FixedRoute {
  method: 'GET' | 'POST';
  /** Under the base URL, e.g. `/auth/login`; also the route's name in logs and metrics (`auth/login`). */
  path: string;
  steps: PipelineStep[];
}

/**
 * Routes without parameters, found by one Map lookup: a trailing slash is ignored, HEAD is answered as
 * GET, another method on a known path is 405 with Allow. A router matching patterns (and the Host header)
 * on every request cost a status call more than the rest of its routing (docs/performance.md).
 */
export function routeTable(baseUrl: string, routes: FixedRoute[]): GatewayMiddleware {
  const byPath = new Map(routes.map(({ method, path, steps }) => [`${baseUrl}${path}`, { method, name: path.slice(1), run: runSteps(steps) }]));
  return (ctx, next) => {
    const path = ctx.path;
    const route = byPath.get(path) ?? (path.endsWith('/') ? byPath.get(path.slice(0, -1)) : undefined);
    if (!route) return next();
    ctx.state.route = route.name;
    if (ctx.method !== route.method && !(route.method === 'GET' && ctx.method === 'HEAD')) throw methodNotAllowed([route.method]);
    return route.run(ctx);
  };
}
