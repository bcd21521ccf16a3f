import type Koa from 'koa';
import type { Logger } from '../log.js';

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

/** Which plugin's middleware, at which point: named in the log when it misbehaves. */
export interface MiddlewareOwner {
  plugin: string;
  point: MiddlewarePoint;
}

const isStreamBody = (body: unknown): body is object =>
  typeof body === 'object' && body !== null && (typeof (body as { pipe?: unknown }).pipe === 'function' || body instanceof ReadableStream);

/**
 * The middleware plugins put at each point, in the order they were added: plugins in the order of the
 * configuration's `plugins` list, each plugin's in the order of its calls.
 */
export class PluginMiddlewareSet {
  private readonly byPoint = new Map<MiddlewarePoint, PluginMiddleware[]>();
  /** Body streams a plugin's middleware set, by stream: who to name if one fails (http/respond.ts). */
  private readonly streamOwners = new WeakMap<object, MiddlewareOwner>();

  constructor(private readonly log: Logger) {}

  add(point: unknown, middleware: unknown, plugin: string): void {
    if (!isPoint(point)) throw new Error(`useMiddleware: no middleware point ${JSON.stringify(point)} (points: ${MIDDLEWARE_POINTS.join(', ')})`);
    if (typeof middleware !== 'function') throw new Error('useMiddleware takes a Koa middleware function (ctx, next)');
    let list = this.byPoint.get(point);
    if (!list) this.byPoint.set(point, (list = []));
    list.push(this.watched(middleware as PluginMiddleware, { plugin, point }));
  }

  /** The plugin whose middleware set this body stream, if one did. */
  ownerOfStream(body: object): MiddlewareOwner | undefined {
    return this.streamOwners.get(body);
  }

  /**
   * A plugin's middleware, watched for a Koa mistake that would otherwise answer for it: returning before the
   * rest of the request is done (it calls `next()` without awaiting it). Koa would send its plain-text 404 while
   * the endpoint still runs; here the answer waits for the endpoint, and an error line names the plugin. A
   * body stream it sets is remembered, so that its failure can be put on the plugin too.
   */
  private watched(middleware: PluginMiddleware, owner: MiddlewareOwner): PluginMiddleware {
    return async (ctx, next) => {
      let downstream: Promise<void> | undefined;
      let settled = false;
      const bodyBefore = ctx.body;
      await middleware(ctx, () => {
        downstream = next();
        // Registered before the middleware's own await: it has run by the time an awaiting middleware resumes.
        downstream.then(
          () => (settled = true),
          () => (settled = true),
        );
        return downstream;
      });
      if (downstream !== undefined && !settled) {
        this.log.error('plugin middleware returned before the request was answered (it does not await next())', {
          ...owner,
          request_id: (ctx.state as { requestId?: string }).requestId,
          path: ctx.path,
        });
        await downstream;
      }
      if (ctx.body !== bodyBefore && isStreamBody(ctx.body)) this.streamOwners.set(ctx.body, owner);
    };
  }

  /** The middleware at a point (an empty list for a point no plugin uses). */
  at(point: string): readonly PluginMiddleware[] {
    return this.byPoint.get(point as MiddlewarePoint) ?? [];
  }
}
