import { PassThrough } from 'node:stream';
import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { authenticateSessionOrKey, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import { clientAddress } from '../http/client-address.js';
import { readJsonObjectBody } from '../http/json-body.js';
import type { CallerRecord } from '../users/user-directory.js';
import { coreError, forbidden, invalidPayload, notFound, type FieldProblem } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { SessionStore } from '../sessions/session-store.js';
import { ALL_STATUSES, ENDED_STATUSES, runData, runLinks, WAITING_STATUSES, type RunRow } from './run-record.js';
import { SSE_KEEPALIVE, sseEvent, wantsEventStream } from './run-sse.js';
import type { RunFilters } from './run-store.js';
import type { Runs } from './runs.js';

export interface RunRoutesServices {
  config: ServerConfig;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  runs: Runs;
  audit: AuditTrail;
}

/** A comment on an idle event stream this often. */
const KEEPALIVE_MS = 15_000;
const RUN_ID = /^[A-Za-z0-9_-]{1,32}$/;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

interface Found {
  run: RunRow;
}
type RunState = AuthenticatedState & Found;

/**
 * Whether the caller may see (or, with `power: 'cancel_power'`, cancel) a run: its own caller (through a key, only
 * one whose scope holds the toolkit), or power at least the run's view_power (cancel_power), or auth.admin_power.
 */
function allowed(ctx: GatewayContext<AuthenticatedState>, run: RunRow, power: 'view_power' | 'cancel_power', adminPower: number): boolean {
  const scope = ctx.state.apiKey?.scope;
  if (scope && !scope.has(run.toolkit)) return false;
  const { caller } = ctx.state;
  // An approver of the run's endpoint sees its runs, as view_power would let them.
  return run.user_id === caller.id || caller.power >= run[power] || caller.power >= adminPower || (power === 'view_power' && isApprover(caller, run));
}

/** Whether the caller is one of a run's approvers: the power and the core group its endpoint's approval names. */
function isApprover(caller: CallerRecord, run: RunRow): boolean {
  if (run.quorum === null) return false;
  if (run.approve_power !== null && caller.power < run.approve_power) return false;
  return run.approve_group === null || caller.core_group_name === run.approve_group;
}

const MAX_COMMENT = 1000;

/** The decision's comment: a string of at most 1000 characters, required for a reject. */
function commentOf(ctx: GatewayContext, required: boolean): string | null {
  const comment = (ctx.request.body as Record<string, unknown>).comment;
  if (comment === undefined || comment === null || comment === '') {
    if (required) throw invalidPayload([{ field: 'comment', rule: 'required', message: 'a reject needs a comment saying why' }]);
    return null;
  }
  if (typeof comment !== 'string') throw invalidPayload([{ field: 'comment', rule: 'type', message: 'comment must be a string' }]);
  if (comment.length > MAX_COMMENT)
    throw invalidPayload([{ field: 'comment', rule: 'max_length', message: `comment must be at most ${MAX_COMMENT} characters` }]);
  return comment;
}

const notPending = (status: string) => coreError('run_not_pending', `the run is not awaiting approval (${status})`, { details: { status } });

const runNotFound = () => notFound('run_not_found', 'no such run');

/** Reads the path's run, 404 run_not_found unless the caller may see it (a run that exists and one that does not answer alike). */
function findRun(s: RunRoutesServices): Stage<AuthenticatedState, Found> {
  return async (ctx, next) => {
    const id = (ctx as unknown as { params: Record<string, string> }).params.id!;
    const run = RUN_ID.test(id) ? await s.runs.store.get(id) : undefined;
    if (!run || !allowed(ctx, run, 'view_power', s.config.auth.admin_power)) throw runNotFound();
    (ctx.state as RunState).run = run;
    return next();
  };
}

/** `Last-Event-ID` (a reconnecting EventSource sends it) or `?after=`: the last chunk the client has. */
function afterOf(ctx: GatewayContext): number {
  const header = ctx.get('Last-Event-ID');
  const query = ctx.query.after;
  const [field, text] = header !== '' ? ['Last-Event-ID', header] : ['after', Array.isArray(query) ? query[0] : query];
  if (text === undefined || text === '') return 0;
  if (!/^\d{1,15}$/.test(text)) throw invalidPayload([{ field, rule: 'format', message: `${field} must be a chunk number (0, 1, 2, ...)` }]);
  return Number(text);
}

/** The output as plain text: every chunk stored so far, stdout and stderr in the order they came. */
async function plainOutput(ctx: GatewayContext<RunState>, s: RunRoutesServices, after: number): Promise<void> {
  const chunks = await s.runs.store.chunksAfter(ctx.state.run.id, after);
  ctx.status = 200;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = chunks.map((chunk) => chunk.data).join('');
}

/** The output as Server-Sent Events: the chunks after `after`, then live ones as they come, then `end`. */
function eventStream(ctx: GatewayContext<RunState>, s: RunRoutesServices, after: number): void {
  const stream = new PassThrough();
  ctx.status = 200;
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.body = stream;
  const keepalive = setInterval(() => stream.write(SSE_KEEPALIVE), KEEPALIVE_MS);
  let unfollow = () => undefined as void;
  const close = () => {
    clearInterval(keepalive);
    unfollow();
    stream.end();
  };
  unfollow = s.runs.feeds.follow(ctx.state.run.id, after, {
    chunk: (chunk) => stream.write(sseEvent(chunk.stream, chunk.data, chunk.seq)),
    end: (ending) => {
      stream.write(sseEvent('end', JSON.stringify(ending)));
      close();
    },
    gone: close,
  });
  ctx.res.once('close', close);
}

function filtersOf(ctx: GatewayContext): RunFilters {
  const problems: FieldProblem[] = [];
  const text = (name: string): string | undefined => {
    const value = ctx.query[name];
    const first = Array.isArray(value) ? value[0] : value;
    return first === undefined || first === '' ? undefined : first;
  };
  const filters: RunFilters = { limit: DEFAULT_LIMIT, toolkit: text('toolkit'), endpoint: text('endpoint'), status: text('status'), username: text('user') };
  const approvable = text('approvable');
  if (approvable !== undefined && approvable !== 'true' && approvable !== 'false')
    problems.push({ field: 'approvable', rule: 'allowed_values', message: 'approvable must be true or false' });
  if (approvable === 'true') filters.approvable = true;
  if (filters.status !== undefined && !(ALL_STATUSES as readonly string[]).includes(filters.status))
    problems.push({ field: 'status', rule: 'allowed_values', message: `status must be one of ${ALL_STATUSES.join(', ')}` });
  const limit = text('limit');
  if (limit !== undefined) {
    if (!/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT)
      problems.push({ field: 'limit', rule: 'range', message: `limit must be a whole number from 1 to ${MAX_LIMIT}` });
    else filters.limit = Number(limit);
  }
  const cursor = text('cursor');
  if (cursor !== undefined) {
    const match = /^(\d{1,15})\.([A-Za-z0-9_-]{1,32})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!match) problems.push({ field: 'cursor', rule: 'format', message: 'cursor must be a next_cursor of an earlier page' });
    else filters.cursor = { queuedAt: Number(match[1]), id: match[2]! };
  }
  if (problems.length > 0) throw invalidPayload(problems, 'the query string is invalid');
  return filters;
}

/**
 * Runs' routes (docs/runs.md): a run, its output (text or live events), its cancel, and the list of runs the caller
 * may see. Every route authenticates as toolkit calls do (a session or an API key).
 */
export function runRoutes(s: RunRoutesServices): RouteContribution {
  const { config, runs } = s;
  const authenticate = authenticateSessionOrKey(s, { countsAsUse: true });
  const chain = (...stages: Array<Stage<RunState>>) => {
    let list = StageList.start().then('authenticate', authenticate).then('run', findRun(s));
    for (const stage of stages) list = list.then('stage', stage);
    return list.middleware;
  };

  const show: Stage<RunState> = (ctx) => sendData(ctx, runData(ctx.state.run));

  const output: Stage<RunState> = async (ctx) => {
    const after = afterOf(ctx);
    if (wantsEventStream(ctx.get('Accept'))) eventStream(ctx, s, after);
    else await plainOutput(ctx, s, after);
  };

  const cancel: Stage<RunState> = async (ctx) => {
    let run = ctx.state.run;
    if (!allowed(ctx, run, 'cancel_power', config.auth.admin_power)) throw forbidden('you may not cancel this run');
    const by = ctx.state.caller.username;
    const now = Date.now();
    if (ENDED_STATUSES.has(run.status)) throw coreError('run_ended', `the run has ended (${run.status})`, { details: { status: run.status } });
    if (WAITING_STATUSES.has(run.status) && (await runs.store.cancelWaiting(run.id, by, now))) {
      runs.feeds.ended(run.id, { status: 'cancelled', exit_code: null });
      runs.ended(run.id, run.toolkit, run.endpoint, 'cancelled', null, null, 'cancelled_by', run.user_id);
    } else if (await runs.store.requestCancel(run.id, by, now)) {
      runs.stopLocal(run.id, { by: 'cancel', who: by }, config.runs.cancel_grace_ms);
    } else {
      const now = await runs.store.get(run.id);
      if (now && ENDED_STATUSES.has(now.status)) throw coreError('run_ended', `the run has ended (${now.status})`, { details: { status: now.status } });
    }
    await s.audit.record({
      requestId: ctx.state.requestId,
      actorUserId: ctx.state.caller.id,
      actor: ctx.state.credential.kind,
      credential: ctx.state.credential.id,
      client: clientAddress(ctx.req, config.server.trust_proxy),
      action: 'run_cancel',
      toolkit: run.toolkit,
      endpoint: run.endpoint,
      status: 202,
      code: 'ok',
      details: { run_id: run.id },
    });
    run = (await runs.store.get(run.id)) ?? run;
    sendData(ctx, runData(run), 202);
  };

  const list: Stage<AuthenticatedState> = async (ctx) => {
    const filters = filtersOf(ctx);
    const { caller, apiKey } = ctx.state;
    // Only a person decides: a machine credential has no run to decide.
    const rows =
      filters.approvable && !ctx.state.session
        ? []
        : await runs.store.list(
            { userId: caller.id, power: caller.power, adminPower: config.auth.admin_power, scope: apiKey?.scope, group: caller.core_group_name },
            filters,
          );
    const last = rows.length === filters.limit ? rows.at(-1) : undefined;
    sendData(ctx, {
      runs: rows.map(runData),
      next_cursor: last ? Buffer.from(`${last.queued_at}.${last.id}`).toString('base64url') : null,
    });
  };

  /** Approve or reject (docs/runs.md, "Approvals"): a person who is one of the run's approvers, not its caller unless allow_self. */
  const decide =
    (decision: 'approve' | 'reject'): Stage<RunState> =>
    async (ctx) => {
      const comment = commentOf(ctx, decision === 'reject');
      const { caller, run } = ctx.state;
      if (!ctx.state.session) throw forbidden('only a person signed in may approve or reject a run (not an API key or a workload token)');
      if (!isApprover(caller, run)) throw forbidden('you are not an approver of this run');
      if (run.user_id === caller.id && !run.allow_self) throw forbidden('you may not approve or reject your own run');
      if (!(await runs.stillPending(run))) throw notPending('expired');
      const outcome = await runs.decide(run, { key: `u:${caller.id}`, userId: caller.id, username: caller.username }, decision, comment, {
        requestId: ctx.state.requestId,
        actorUserId: caller.id,
        actor: ctx.state.credential.kind,
        credential: ctx.state.credential.id,
        client: clientAddress(ctx.req, config.server.trust_proxy),
      });
      if (outcome === 'already_decided') throw coreError('already_decided', 'you have decided on this run already');
      const now = (await runs.store.get(run.id)) ?? run;
      if (outcome === 'not_pending') throw notPending(now.status);
      sendData(ctx, runData(now));
    };
  const body = readJsonObjectBody(config.server.max_body_bytes, config.server.body_timeout_ms);

  return ({ base, add }) => {
    add('GET', `${base}/runs`, 'runs', ...StageList.start().then('authenticate', authenticate).then('list', list).middleware);
    add('GET', `${base}/runs/:id`, 'runs/:id', ...chain(show));
    add('GET', `${base}/runs/:id/output`, 'runs/:id/output', ...chain(output));
    add('POST', `${base}/runs/:id/cancel`, 'runs/:id/cancel', ...chain(cancel));
    add('POST', `${base}/runs/:id/approve`, 'runs/:id/approve', ...chain(body, decide('approve')));
    add('POST', `${base}/runs/:id/reject`, 'runs/:id/reject', ...chain(body, decide('reject')));
  };
}

export { runLinks };
