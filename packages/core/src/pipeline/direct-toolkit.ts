import type Koa from 'koa';
import type { GatewayContext, GatewayState } from '../http/context.js';
import type { CorsPolicy } from '../http/cors.js';
import type { DirectAnswer } from '../http/direct-answers.js';
import { answerError } from '../http/error-envelope.js';
import { giveRequestId } from '../http/request-id.js';
import { respond } from '../http/respond.js';
import { endOfTurn } from '../http/respond-at-turn-end.js';
import { watchRequest, type RequestRecorder } from '../ops/request-log.js';
import { toolkitAddress, toolkitPrefix, toolkitRequest, type PipelineServices } from './toolkit-pipeline.js';

export interface DirectToolkitOptions {
  app: Koa<GatewayState>;
  services: PipelineServices;
  record: RequestRecorder;
  /** A request with an Origin while CORS is on is left to the stack (cors.ts). */
  cors: CorsPolicy;
}

/**
 * Toolkit requests answered outside Koa's middleware stack (direct-answers.ts): a Koa context all the same
 * (app.createContext, so every step and plugin sees what it always saw), given what the stack would give it
 * (the access line and metrics, the request id, the error envelope), the pipeline run on it, and the answer
 * written with the turn's others. Skipped: the chain of middleware promises and on-finished's listeners,
 * a third of a proxied request's instructions in Node (docs/performance.md). A request with an Origin
 * while CORS is on, or a path that is no toolkit address, is left to the stack.
 */
export function directToolkit({ app, services, record, cors }: DirectToolkitOptions): DirectAnswer {
  const prefix = toolkitPrefix(services);
  const baseUrl = services.config.server.base_url;
  const request = toolkitRequest(services);
  const fail = (ctx: GatewayContext, thrown: unknown) => answerError(services.log, ctx, thrown);
  const answer = (ctx: GatewayContext) => {
    try {
      respond(ctx);
    } catch (err) {
      services.log.error('answer not written', { request_id: ctx.state.requestId, path: ctx.path, err });
      ctx.res.destroy();
    }
  };
  return (req, res) => {
    const url = req.url!;
    if (!url.startsWith(prefix) || (cors.on && req.headers.origin !== undefined)) return false;
    const query = url.indexOf('?');
    const address = toolkitAddress(query === -1 ? url : url.slice(0, query), prefix);
    if (!address) return false;
    const ctx = app.createContext(req, res) as GatewayContext;
    res.statusCode = 404;
    watchRequest(ctx, record, baseUrl);
    giveRequestId(ctx);
    if (cors.variesByOrigin) ctx.vary('Origin');
    ctx.state.address = address;
    let running: void | Promise<void> = undefined;
    try {
      running = request(ctx);
    } catch (thrown) {
      fail(ctx, thrown);
    }
    const answered = running ? running.catch((thrown: unknown) => fail(ctx, thrown)) : undefined;
    void (answered ? answered.then(endOfTurn) : endOfTurn()).then(() => answer(ctx));
    return true;
  };
}
