import Router, { type RouterContext } from '@koa/router';
import type { Next } from 'koa';
import { methodNotAllowed } from '../errors.js';
import type { GatewayMiddleware, GatewayState } from './context.js';

type Method = 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';

/** What a domain's routes are added with (each domain exports a RouteContribution, assembled in app.ts). */
export interface Routes {
  /** server.base_url: every route but /healthz and /readyz is under it. */
  readonly base: string;
  /**
   * A fixed route: `path` is the whole path (give `${routes.base}/...`), `name` its template in the access
   * log and the metrics (`auth/login`, `auth/oidc/:provider/login`). GET also answers HEAD; a trailing slash
   * is ignored; another method on a path that has routes is 405 with Allow naming theirs.
   */
  add(method: Method, path: string, name: string, ...middleware: GatewayMiddleware[]): void;
  /** A route matched by a pattern, for any method, without a name of its own (it sets ctx.state.route itself, or stays `other`). */
  pattern(path: RegExp, middleware: GatewayMiddleware): void;
}

export type RouteContribution = (routes: Routes) => void;

/**
 * The one router of the fixed routes (@koa/router), from every domain's contribution. Case-sensitive, like
 * the paths in SPEC. Its middleware passes any path it does not know on (to the 404 after it).
 */
export function gatewayRouter(base: string, contributions: readonly RouteContribution[]): GatewayMiddleware {
  const router = new Router<GatewayState>({ sensitive: true });
  const routes: Routes = {
    base,
    add(method, path, name, ...middleware) {
      router.register(path, [method], middleware, { name });
    },
    pattern(path, middleware) {
      router.all(path, middleware);
    },
  };
  for (const contribute of contributions) contribute(routes);
  const dispatch = router.routes() as GatewayMiddleware;
  return (ctx, next) => dispatch(ctx, () => otherMethod(ctx as RouterContext, next));
}

/**
 * What the router passes on: a path it knows with another method is 405 with Allow naming the path's
 * methods (HEAD goes without saying beside GET), named like the path's routes; any other path goes on.
 */
function otherMethod(ctx: RouterContext, next: Next): Promise<unknown> {
  // Fixed routes have names; a pattern route (any method) has none.
  const layers = ctx.matched?.filter((layer) => layer.name) ?? [];
  if (layers.length === 0) return next();
  ctx.state.route = layers[0]!.name!;
  const methods = new Set(layers.flatMap((layer) => layer.methods));
  if (methods.has('GET')) methods.delete('HEAD');
  throw methodNotAllowed([...methods]);
}

/** The route's template for logs and metrics, as the router named it (ctx.routerName), else undefined. */
export const routeName = (ctx: { routerName?: string }): string | undefined => ctx.routerName;
