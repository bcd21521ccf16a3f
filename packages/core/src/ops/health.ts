/**
 * GET /healthz and /readyz at the root of the main listener (docs/operating.md, "Health and readiness"): no auth, no envelope.
 * /healthz answers while the process serves; /readyz says whether this instance should get traffic.
 */
import type { Database } from '../db/connect.js';
import { databaseCheck, OK } from './database-probe.js';
import type { GatewayContext } from '../http/context.js';
import type { RouteContribution } from '../http/routes.js';
import type { Logger } from '../log.js';
import type { RequestListener } from 'node:http';

/** What readiness depends on beyond the database; the gateway updates it as it starts and stops. */
export interface ReadinessState {
  toolkitsLoaded: boolean;
  draining: boolean;
  /** Toolkit files refused as they are now: reported, but not a reason to take the instance out (docs/toolkits.md, "A broken file at start"). */
  refusedToolkitFiles?: () => number;
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

const toolkitsCheck = (refused: number): string => (refused === 0 ? OK : `${refused} refused`);

/** /readyz: the database reads and writes within a second (database-probe.ts), the toolkits loaded, not draining. */
function readiness(checkDatabase: () => Promise<string>, state: ReadinessState) {
  return async (ctx: GatewayContext) => {
    const checks = {
      database: await checkDatabase(),
      toolkits: state.toolkitsLoaded ? toolkitsCheck(state.refusedToolkitFiles?.() ?? 0) : 'not loaded yet',
      draining: state.draining ? 'draining: this instance is stopping' : OK,
    };
    const failing = Object.entries(checks)
      .filter(([name, result]) => result !== OK && !(name === 'toolkits' && state.toolkitsLoaded))
      .map(([name]) => name);
    if (failing.length === 0) return answer(ctx, 200, { status: 'ready', checks });
    answer(ctx, 503, { status: state.draining ? 'draining' : 'unready', failing, checks });
  };
}

/**
 * What the listener answers while the gateway waits for its database at start (db/wait-for-database.ts):
 * /healthz 200 (the process runs), /readyz 503 naming the database, anything else 503 `unavailable`.
 */
export const answerWhileWaitingForDatabase: RequestListener = (req, res) => {
  const route = (req.url ?? '').split('?')[0];
  const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'GET' && route === '/healthz') return send(200, { status: 'ok' });
  if (req.method === 'GET' && route === '/readyz')
    return send(503, { status: 'unready', failing: ['database', 'toolkits'], checks: { database: 'unreachable', toolkits: 'not loaded yet', draining: OK } });
  send(503, { success: false, error: { code: 'unavailable', message: 'the gateway is starting: its database cannot be reached yet' } }, { 'Retry-After': '5' });
};
