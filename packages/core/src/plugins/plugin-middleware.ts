import type Koa from 'koa';

/** A plugin's Koa middleware: any `(ctx, next)` of the Koa ecosystem, unchanged. */
export type PluginMiddleware = (ctx: Koa.Context, next: Koa.Next) => unknown;

/** The toolkit pipeline's steps by name, in order (pipeline/toolkit-pipeline.ts): `after:<name>` is a point. */
export const STEP_NAMES = ['authenticate', 'toolkit', 'route', 'permission', 'payload-filter', 'db-context', 'group', 'context', 'wrapping'] as const;
export type StepName = (typeof STEP_NAMES)[number];

/**
 * Where a plugin's middleware runs (docs/plugins.md, "Middleware"): `request` around every request that
 * reaches the routes (auth, health, openapi, toolkits, 404s), inside the error envelope; on toolkit requests
 * `before:authenticate`, `after:<step>` for each named step, and `before:execute` (after the last of them).
 */
export const MIDDLEWARE_POINTS = ['request', 'before:authenticate', ...STEP_NAMES.map((name) => `after:${name}` as const), 'before:execute'] as const;
export type MiddlewarePoint = (typeof MIDDLEWARE_POINTS)[number];

const isPoint = (point: unknown): point is MiddlewarePoint => (MIDDLEWARE_POINTS as readonly unknown[]).includes(point);

/**
 * The middleware plugins put at each point, in the order they were added: plugins in the order of the
 * configuration's `plugins` list, each plugin's in the order of its calls.
 */
export class PluginMiddlewareSet {
  private readonly byPoint = new Map<MiddlewarePoint, PluginMiddleware[]>();

  add(point: unknown, middleware: unknown): void {
    if (!isPoint(point)) throw new Error(`useMiddleware: no middleware point ${JSON.stringify(point)} (points: ${MIDDLEWARE_POINTS.join(', ')})`);
    if (typeof middleware !== 'function') throw new Error('useMiddleware takes a Koa middleware function (ctx, next)');
    let list = this.byPoint.get(point);
    if (!list) this.byPoint.set(point, (list = []));
    list.push(middleware as PluginMiddleware);
  }

  /** The middleware at a point (an empty list for a point no plugin uses). */
  at(point: string): readonly PluginMiddleware[] {
    return this.byPoint.get(point as MiddlewarePoint) ?? [];
  }
}
