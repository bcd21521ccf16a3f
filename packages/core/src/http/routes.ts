import Router from '@koa/router';
import type { Next } from 'koa';
import compose, { type ComposedMiddleware } from 'koa-compose';
import { methodNotAllowed } from '../errors.js';
import type { GatewayContext, GatewayMiddleware, GatewayState } from './context.js';
import { refuseNulInUrl } from './payload-parsers.js';

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
 * the documented paths. A request runs the first route its path and method match (router.match), the route's
 * name becomes its template in logs and metrics (ctx.state.route), and each route's middleware is composed
 * once: router.routes() would compose a new chain on every request, a cost docs/performance.md measured;
 * and the match is looked up rather than tested route by route (matchTable).
 * A path it does not know goes on (to the 404 after it). A URL holding a NUL is refused first (payload-parsers.ts).
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
  const chains = new Map<RouteLayer, ComposedMiddleware<GatewayContext>>();
  for (const layer of router.stack) chains.set(layer, compose(layer.stack as GatewayMiddleware[]));
  const { fixed, variable } = matchTable(router);
  return (ctx, next) => {
    refuseNulInUrl(ctx.req.url!);
    const path = ctx.path;
    const method = ctx.method;
    const onPath = fixed.get(path);
    const layers = onPath ?? variable.candidates(path);
    const layer = onPath ? firstFor(onPath, method) : firstMatching(layers, path, method);
    if (!layer) return otherMethod(ctx, onPath ?? layers.filter((each) => each.match(path)), next);
    if (layer.name) ctx.state.route = layer.name;
    if (layer.paramNames.length > 0) (ctx as GatewayContext & { params: Record<string, string> }).params = layer.params(path, layer.captures(path));
    return chains.get(layer)!(ctx, next);
  };
}

type RouteLayer = Router<GatewayState>['stack'][number];

/**
 * What router.match(path) gives, looked up instead of tested layer by layer: it ran a regular expression
 * (and a debug call) for every route on every request, most of the router's cost per request
 * (docs/performance.md, "One request path through Koa"). A route without parameters matches exactly its path and that
 * path with a trailing slash, so for those paths the layers router.match finds are known in advance
 * (`fixed`, the same layers in the same order); any other path can only match a route with parameters or
 * a pattern (`variable`, in the router's order), tested as router.match tests them.
 */
function matchTable(router: Router<GatewayState>): { fixed: Map<string, readonly RouteLayer[]>; variable: VariableRoutes } {
  const isFixed = (layer: RouteLayer) =>
    typeof layer.path === 'string' &&
    layer.paramNames.length === 0 &&
    !/[:*?(){}\\]|\/$/.test(layer.path) &&
    layer.match(layer.path) &&
    layer.match(`${layer.path}/`);
  const fixed = new Map<string, readonly RouteLayer[]>();
  for (const layer of router.stack) {
    if (!isFixed(layer)) continue;
    const path = layer.path as string;
    for (const each of [path, `${path}/`]) fixed.set(each, router.match(each, 'GET').path);
  }
  return { fixed, variable: new VariableRoutes(router.stack.filter((layer) => !isFixed(layer))) };
}

/**
 * The routes with parameters and the patterns, by the first two segments of the path they match (`/api/tk/`):
 * a request tests only those its path can match, in the router's order. Testing each in turn was a regular
 * expression and a method check per route, some twenty for every toolkit call (docs/performance.md, "One request
 * path through Koa"). A route's literal start is read off its regular expression (literalStart); one that does not
 * fix two segments is tested for every path.
 */
export class VariableRoutes {
  private readonly byStart = new Map<string, readonly RouteLayer[]>();
  /** The routes whose literal start is shorter than two segments: the candidates of a path no route's start names. */
  private readonly unkeyed: readonly RouteLayer[];

  constructor(layers: readonly RouteLayer[]) {
    const starts = layers.map((layer) => segmentsKey(literalStart(layer.regexp)));
    const keys = new Set(starts.filter((key): key is string => key !== undefined));
    // Each list keeps the router's order: a route of that start, or one whose start is too short to tell.
    for (const key of keys)
      this.byStart.set(
        key,
        layers.filter((_, i) => starts[i] === key || starts[i] === undefined),
      );
    this.unkeyed = layers.filter((_, i) => starts[i] === undefined);
  }

  /** The routes `path` may match, in the router's order: every other one cannot match it. */
  candidates(path: string): readonly RouteLayer[] {
    const key = segmentsKey(path);
    return (key !== undefined && this.byStart.get(key)) || this.unkeyed;
  }
}

/** The path up to and with its third `/` (`/api/tk/` of `/api/tk/app/...`), or undefined when it has fewer. */
function segmentsKey(path: string): string | undefined {
  const second = path.indexOf('/', 1);
  const third = second < 0 ? -1 : path.indexOf('/', second + 1);
  return third < 0 ? undefined : path.slice(0, third + 1);
}

/**
 * The text every path a regular expression matches starts with, as far as it can be read for sure: after `^`
 * (and path-to-regexp's `(?:`), plain characters and escaped punctuation up to the first operator. A character a
 * quantifier follows is not part of it; an alternation, a case-insensitive or multiline pattern or an optional first group
 * make it empty.
 */
export function literalStart(regexp: RegExp): string {
  const source = regexp.source;
  if (/[im]/.test(regexp.flags) || !source.startsWith('^') || source.includes('|')) return '';
  let i = 1;
  if (source.startsWith('(?:', i)) {
    const close = closingParen(source, i);
    if (close < 0 || quantifiedAt(source, close + 1)) return '';
    i += 3;
  }
  let start = '';
  while (i < source.length) {
    const c = source.charAt(i);
    let literal: string;
    let width = 1;
    if (c === '\\') {
      const escaped = source.charAt(i + 1);
      if (!/^[/\-.$^*+?()[\]{}|\\]$/.test(escaped)) break;
      literal = escaped;
      width = 2;
    } else if (/^[A-Za-z0-9/_~!@%&=:;,'"<>`#-]$/.test(c)) {
      literal = c;
    } else {
      break;
    }
    if (quantifiedAt(source, i + width)) break;
    start += literal;
    i += width;
  }
  return start;
}

/** Whether a quantifier (`?`, `*`, `{n,m}`) stands at `at`: what precedes it may be absent or repeated. */
const quantifiedAt = (source: string, at: number): boolean => at < source.length && '?*{'.includes(source.charAt(at));

/** The index of the `)` closing the group opened at `open`, or -1 (escapes and character classes skipped). */
function closingParen(source: string, open: number): number {
  let depth = 0;
  let inClass = false;
  for (let i = open; i < source.length; i++) {
    const c = source.charAt(i);
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** The first of a path's layers that answers the method (router.match's pathAndMethod[0]). */
function firstFor(onPath: readonly RouteLayer[], method: string): RouteLayer | undefined {
  for (const layer of onPath) if (layer.methods.includes(method)) return layer;
  return undefined;
}

/** The first layer that matches path and method. */
function firstMatching(layers: readonly RouteLayer[], path: string, method: string): RouteLayer | undefined {
  for (const layer of layers) if (layer.methods.includes(method) && layer.match(path)) return layer;
  return undefined;
}

/**
 * A path the router knows with another method: 405 with Allow naming the path's methods (HEAD goes without
 * saying beside GET), named like the path's routes. Any other path goes on.
 */
function otherMethod(ctx: GatewayContext, onPath: readonly RouteLayer[], next: Next): Promise<unknown> {
  // Fixed routes have names; a pattern route (any method) has none.
  const layers = onPath.filter((layer) => layer.name);
  if (layers.length === 0) return next();
  ctx.state.route = layers[0]!.name!;
  const methods = new Set(layers.flatMap((layer) => layer.methods));
  if (methods.has('GET')) methods.delete('HEAD');
  throw methodNotAllowed([...methods]);
}
