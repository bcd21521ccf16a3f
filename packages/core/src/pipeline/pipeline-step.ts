import type { GatewayContext, GatewayMiddleware } from '../http/context.js';

/**
 * One step of a request's way through the gateway: it does its part (or throws a GatewayError) and returns;
 * it returns a promise only when it must wait (a database read, a body, the plugin). Unlike Koa middleware
 * a step has no `next`: steps run in the order of their list, so the list is the flow, and a step that
 * finishes at once costs no promise and no microtask (docs/performance.md has what this bought).
 */
export type PipelineStep = (ctx: GatewayContext) => void | Promise<void>;

/** Runs `steps` in order from `index`, synchronously until one returns a promise, then on after it. */
function runFrom(ctx: GatewayContext, steps: readonly PipelineStep[], index: number): void | Promise<void> {
  for (let i = index; i < steps.length; i++) {
    const waiting = steps[i]!(ctx);
    if (waiting) return waiting.then(() => runFrom(ctx, steps, i + 1));
  }
}

/** The steps as one Koa middleware that ends the chain (nothing after them runs). */
export function runSteps(steps: readonly PipelineStep[]): (ctx: GatewayContext) => void | Promise<void> {
  return (ctx) => runFrom(ctx, steps, 0);
}

/** A step where Koa wants middleware (a fixed route's chain): runs the step, then the rest. */
export function stepAsMiddleware(step: PipelineStep): GatewayMiddleware {
  return (ctx, next) => {
    const waiting = step(ctx);
    return waiting ? waiting.then(next) : next();
  };
}
