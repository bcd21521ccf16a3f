import type Koa from 'koa';

type Delegating = { request: Koa.Request; response: Koa.Response & { set(field: unknown, value: unknown): void } };

/**
 * Koa's context delegates ctx.path, ctx.body, ctx.set ... to ctx.request and ctx.response through the
 * `delegates` package: one function literal for all names (`this[target][name]`), so its lookups see every
 * name and go megamorphic, V8's slowest kind, some ten times per request (Koa's own respond included). These
 * are the same accessors for the names every request uses, one function each: what they read and write is
 * still Koa's request and response, only the lookup is direct (docs/performance.md, "One request path through Koa").
 */
export function directContextAccessors(context: Koa.BaseContext): void {
  // The aligned lines are a table of names: kept as written.
  // prettier-ignore
  Object.defineProperties(context, {
    path: { enumerable: true, configurable: true, get(this: Delegating) { return this.request.path; }, set(this: Delegating, value: string) { this.request.path = value; } },
    method: { enumerable: true, configurable: true, get(this: Delegating) { return this.request.method; }, set(this: Delegating, value: string) { this.request.method = value; } },
    status: { enumerable: true, configurable: true, get(this: Delegating) { return this.response.status; }, set(this: Delegating, value: number) { this.response.status = value; } },
    body: { enumerable: true, configurable: true, get(this: Delegating) { return this.response.body; }, set(this: Delegating, value: unknown) { this.response.body = value; } },
    writable: { enumerable: true, configurable: true, get(this: Delegating) { return this.response.writable; } },
    set: { enumerable: true, configurable: true, writable: true, value(this: Delegating, field: unknown, value: unknown) { this.response.set(field, value); } },
    get: { enumerable: true, configurable: true, writable: true, value(this: Delegating, field: string) { return this.request.get(field); } },
  });
}
