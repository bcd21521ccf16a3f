import type Koa from 'koa';
import type { GatewayContext, GatewayMiddleware, GatewayState } from './context.js';

declare const adds: unique symbol;

/**
 * Koa middleware `(ctx, next)` that takes a request whose state is `In` and, before it calls `next`, adds
 * `Added` to it: the middleware after it may rely on what it added. `Added` is a mark for the compiler only
 * (nothing at run time), read by StageList: a list whose order does not supply what a stage needs does not
 * compile, so the order of the steps is in the types, not in `!` assertions.
 */
export type Stage<In extends GatewayState, Added extends object = object> = ((ctx: GatewayContext<In>, next: Koa.Next) => unknown) & {
  readonly [adds]?: Added;
};

/** Where plugins' middleware goes into a list of stages, by the point's name (plugins/plugin-middleware.ts). */
export type MiddlewareAt = (point: string) => readonly GatewayMiddleware[];

/**
 * Stages in order, each typed on the state the ones before it left: `then(name, stage)` appends a stage and
 * the middleware plugins put after it (`after:<name>`); `point(name)` appends the middleware plugins put at
 * a point of that name. `middleware` is the list, for koa-compose.
 */
export class StageList<S extends GatewayState> {
  private constructor(
    readonly middleware: readonly GatewayMiddleware[],
    private readonly at: MiddlewareAt,
  ) {}

  /** A list that starts on state S; `at` gives plugins' middleware by point (none without it: a fixed route's chain). */
  static start<S extends GatewayState = GatewayState>(at: MiddlewareAt = () => []): StageList<S> {
    return new StageList<S>([], at);
  }

  then<Added extends object>(name: string, stage: Stage<S, Added>): StageList<S & Added> {
    return new StageList<S & Added>([...this.middleware, stage as GatewayMiddleware, ...this.at(`after:${name}`)], this.at);
  }

  point(name: string): StageList<S> {
    return new StageList<S>([...this.middleware, ...this.at(name)], this.at);
  }
}
