import type { Next } from 'koa';
import { asExposedHttpError, asGatewayError } from '../errors.js';
import type { GatewayContext } from '../http/context.js';

/** How an audited action ended: the answer's status, its error code (`ok` below 400), and how long it took. */
export interface AnswerOutcome {
  status: number;
  code: string;
  durationMs: number;
}

/**
 * Runs the rest of the chain (`next`), then hands `record` how it ended, whether it answered or threw (a thrown
 * GatewayError's status and code; anything else is 500 `internal_error`, as the error envelope will answer it).
 * What was thrown is thrown on, after `record`.
 */
export async function withOutcome(ctx: GatewayContext, next: Next, record: (outcome: AnswerOutcome) => Promise<void>): Promise<void> {
  const started = performance.now();
  const outcome: AnswerOutcome = { status: 500, code: 'internal_error', durationMs: 0 };
  try {
    await next();
    outcome.status = ctx.status;
    outcome.code = ctx.status < 400 ? 'ok' : 'error';
  } catch (err) {
    const known = asGatewayError(err) ?? asExposedHttpError(err);
    if (known) ({ status: outcome.status, code: outcome.code } = known);
    throw err;
  } finally {
    outcome.durationMs = performance.now() - started;
    await record(outcome);
  }
}
