import type { CompiledEndpoint, CompiledToolkit } from './compiled-toolkit.js';
import { matchTemplate, type PathMatch } from './path-templates.js';

/** A request's endpoint: the one for its method, or the methods the matching paths take (405). */
export type RouteMatch = { endpoint: CompiledEndpoint; path?: PathMatch } | { allowed: readonly string[] } | undefined;

/**
 * The endpoint an endpoint path (as received) and method name. An exact path is one map lookup, as it always
 * was; templates are tried only when no exact path takes the method: `{name}` ones, then wildcards
 * (toolkit.templates is in that order). undefined when no path matches at all (404).
 */
export function matchRoute(toolkit: CompiledToolkit, endpointPath: string, method: string): RouteMatch {
  const byMethod = toolkit.routes.get(endpointPath);
  // A template's own text (`hosts/{host}`) sent literally is not that template's exact path.
  const exact = byMethod?.get(method);
  if (exact && !exact.template) return { endpoint: exact };
  const allowed = byMethod && !byMethod.values().next().value?.template ? [...byMethod.keys()] : [];
  if (toolkit.templates.length === 0) return allowed.length > 0 ? { allowed } : undefined;
  const parts = endpointPath.split('/');
  for (const route of toolkit.templates) {
    const path = matchTemplate(route.template, parts);
    if (!path) continue;
    const endpoint = route.byMethod.get(method);
    if (endpoint) return { endpoint, path };
    allowed.push(...route.byMethod.keys());
  }
  return allowed.length > 0 ? { allowed: [...new Set(allowed)] } : undefined;
}

/** The route name of a path a live endpoint takes (any method): the endpoint's path as written, templates as templates. */
export function routeName(toolkit: CompiledToolkit, endpointPath: string): string | undefined {
  const byMethod = toolkit.routes.get(endpointPath);
  if (byMethod && !byMethod.values().next().value?.template) return endpointPath;
  if (toolkit.templates.length === 0) return undefined;
  const parts = endpointPath.split('/');
  for (const route of toolkit.templates) if (matchTemplate(route.template, parts)) return route.byMethod.values().next().value?.path;
  return undefined;
}
