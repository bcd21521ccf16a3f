/**
 * GET /healthz and /readyz at the root of the main listener (SPEC section 9): no auth, no envelope.
 * /healthz answers while the process serves; /readyz says whether this instance should get traffic.
 */
import type { Database } from '../db/connect.js';
import type { GatewayContext } from '../http/context.js';
import type { RouteContribution } from '../http/routes.js';
import type { Logger } from '../log.js';

/** What readiness depends on beyond the database; the gateway updates it as it starts and stops. */
export interface ReadinessState {
  toolkitsLoaded: boolean;
  draining: boolean;
}

const DATABASE_DEADLINE_MS = 1_000;
const OK = 'ok';

/**
 * `select 1` within a second. Probes arriving while one runs share it, so a hanging database never piles
 * up queries; the detailed cause goes to the log (once per change), the answer names the check only.
 */
function databaseCheck(db: Database, log: Logger): () => Promise<string> {
  let running: Promise<string> | undefined;
  let lastCause = '';
  const run = async (): Promise<string> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${DATABASE_DEADLINE_MS} ms`)), DATABASE_DEADLINE_MS);
    });
    try {
      await Promise.race([db.raw('select 1'), deadline]);
      if (lastCause) log.info('readiness: database answers again');
      lastCause = '';
      return OK;
    } catch (err) {
      const cause = (err as Error).message;
      if (cause !== lastCause) log.warn('readiness: database check failed', { reason: cause });
      lastCause = cause;
      return cause.startsWith('no answer') ? `no answer within ${DATABASE_DEADLINE_MS / 1000}s` : 'unreachable';
    } finally {
      clearTimeout(timer);
    }
  };
  return () => (running ??= run().finally(() => (running = undefined)));
}

function answer(ctx: GatewayContext, status: number, body: Record<string, unknown>): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}

/** /healthz and /readyz, at the root whatever server.base_url is. */
export function healthRoutes(db: Database, state: ReadinessState, log: Logger): RouteContribution {
  const ready = readiness(databaseCheck(db, log), state);
  return ({ add }) => {
    add('GET', '/healthz', 'healthz', (ctx) => answer(ctx, 200, { status: 'ok' }));
    add('GET', '/readyz', 'readyz', ready);
  };
}

/** /readyz: the database within a second, the toolkits loaded, not draining. */
function readiness(checkDatabase: () => Promise<string>, state: ReadinessState) {
  return async (ctx: GatewayContext) => {
    const checks = {
      database: await checkDatabase(),
      toolkits: state.toolkitsLoaded ? OK : 'not loaded yet',
      draining: state.draining ? 'draining: this instance is stopping' : OK,
    };
    const failing = Object.entries(checks)
      .filter(([, result]) => result !== OK)
      .map(([name]) => name);
    if (failing.length === 0) return answer(ctx, 200, { status: 'ready', checks });
    answer(ctx, 503, { status: state.draining ? 'draining' : 'unready', failing, checks });
  };
}
