import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import { authenticateSessionOrKey, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import { clientAddress } from '../http/client-address.js';
import { readJsonObjectBody } from '../http/json-body.js';
import { forbidden, invalidPayload, notFound, type FieldProblem } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { SessionStore } from '../sessions/session-store.js';
import { decisionComment, isApprover } from './approvals/approval-deciders.js';
import type { RunFeeds } from './output/run-feeds.js';
import { answerOutput } from './output/output-stream.js';
import type { CommandCaller, RunCommands } from './run-commands.js';
import { ALL_STATUSES, runData, runLinks, type RunRow } from './run-record.js';
import type { RunFilters, RunStore } from './run-store.js';
import type { RunNodes } from './run-nodes.js';
import { nodeFields, nodePage, rerun } from './node-routes.js';

export interface RunRoutesServices {
  config: ServerConfig;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  /** What the routes read: a run, the runs a caller may see, a run's stored output. */
  reads: Pick<RunStore, 'get' | 'list' | 'chunksAfter'>;
  feeds: Pick<RunFeeds, 'follow'>;
  commands: RunCommands;
  /** The nodes of runs with nodes (node-routes.ts). */
  nodes?: RunNodes;
}

const RUN_ID = /^[A-Za-z0-9_-]{1,32}$/;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

interface Found {
  run: RunRow;
}
type RunState = AuthenticatedState & Found;

/**
 * Whether the caller may see a run: its own caller (through a key, only one whose scope holds the toolkit), or
 * power at least the run's view_power, or auth.admin_power, or one of its approvers.
 */
function mayView(ctx: GatewayContext<AuthenticatedState>, run: RunRow, adminPower: number): boolean {
  const scope = ctx.state.apiKey?.scope;
  if (scope && !scope.has(run.toolkit)) return false;
  const { caller } = ctx.state;
  return run.user_id === caller.id || caller.power >= run.view_power || caller.power >= adminPower || isApprover(caller, run);
}

const runNotFound = () => notFound('run_not_found', 'no such run');

/** The caller of a route, as a command records them. */
function commandCaller(ctx: GatewayContext<AuthenticatedState>, config: ServerConfig): CommandCaller {
  return {
    name: ctx.state.caller.username,
    audit: {
      requestId: ctx.state.requestId,
      actorUserId: ctx.state.caller.id,
      actor: ctx.state.credential.kind,
      credential: ctx.state.credential.id,
      client: clientAddress(ctx.req, config.server.trust_proxy),
    },
  };
}

/** Reads the path's run, 404 run_not_found unless the caller may see it (a run that exists and one that does not answer alike). */
function findRun(s: RunRoutesServices): Stage<AuthenticatedState, Found> {
  return async (ctx, next) => {
    const id = (ctx as unknown as { params: Record<string, string> }).params.id!;
    const run = RUN_ID.test(id) ? await s.reads.get(id) : undefined;
    if (!run || !mayView(ctx, run, s.config.auth.admin_power)) throw runNotFound();
    (ctx.state as RunState).run = run;
    return next();
  };
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
  const { config, commands } = s;
  const authenticate = authenticateSessionOrKey(s, { countsAsUse: true });
  const chain = (...stages: Array<Stage<RunState>>) => {
    let list = StageList.start().then('authenticate', authenticate).then('run', findRun(s));
    for (const stage of stages) list = list.then('stage', stage);
    return list.middleware;
  };

  const show: Stage<RunState> = async (ctx) => sendData(ctx, { ...runData(ctx.state.run), ...(await nodeFields(s.nodes, ctx.state.run)) });

  const output: Stage<RunState> = (ctx) => answerOutput(ctx, { store: s.reads, feeds: s.feeds }, ctx.state.run.id);

  const cancel: Stage<RunState> = async (ctx) => {
    const { run, caller, apiKey } = ctx.state;
    if (!commands.mayCancel(caller, run, apiKey?.scope ?? undefined)) throw forbidden('you may not cancel this run');
    const cancelled = await commands.cancel(run, commandCaller(ctx, config));
    // Nodes of a run that never started end with it.
    if (cancelled.how === 'cancelled' && run.node_count !== null) await s.nodes?.endOpen(run.id, 'cancelled', 'cancelled_by', Date.now());
    sendData(ctx, { ...runData(cancelled.run), ...(await nodeFields(s.nodes, cancelled.run)) }, 202);
  };

  const list: Stage<AuthenticatedState> = async (ctx) => {
    const filters = filtersOf(ctx);
    const { caller, apiKey } = ctx.state;
    // Only a person decides: a machine credential has no run to decide.
    const rows =
      filters.approvable && !ctx.state.session
        ? []
        : await s.reads.list(
            { userId: caller.id, power: caller.power, adminPower: config.auth.admin_power, scope: apiKey?.scope, group: caller.core_group_name },
            filters,
          );
    const last = rows.length === filters.limit ? rows.at(-1) : undefined;
    sendData(ctx, {
      runs: rows.map(runData),
      next_cursor: last ? Buffer.from(`${last.queued_at}.${last.id}`).toString('base64url') : null,
    });
  };

  /** Approve or reject (docs/runs.md, "Approvals"): the rules are RunCommands.decide's. */
  const decide =
    (decision: 'approve' | 'reject'): Stage<RunState> =>
    async (ctx) => {
      const comment = decisionComment((ctx.request.body as Record<string, unknown>).comment, decision);
      const decider = { kind: 'person' as const, caller: ctx.state.caller, session: ctx.state.session !== undefined };
      sendData(ctx, runData((await commands.decide(ctx.state.run, decider, decision, comment, commandCaller(ctx, config))).run));
    };
  const body = readJsonObjectBody(config.server.max_body_bytes, config.server.body_timeout_ms);

  return ({ base, add }) => {
    add('GET', `${base}/runs`, 'runs', ...StageList.start().then('authenticate', authenticate).then('list', list).middleware);
    add('GET', `${base}/runs/:id`, 'runs/:id', ...chain(show));
    add('GET', `${base}/runs/:id/output`, 'runs/:id/output', ...chain(output));
    add('POST', `${base}/runs/:id/cancel`, 'runs/:id/cancel', ...chain(cancel));
    add('POST', `${base}/runs/:id/approve`, 'runs/:id/approve', ...chain(body, decide('approve')));
    add('POST', `${base}/runs/:id/reject`, 'runs/:id/reject', ...chain(body, decide('reject')));
    if (s.nodes) {
      const nodeServices = { config, nodes: s.nodes, commands: s.commands };
      add('GET', `${base}/runs/:id/nodes`, 'runs/:id/nodes', ...chain(nodePage(nodeServices)));
      add('POST', `${base}/runs/:id/rerun`, 'runs/:id/rerun', ...chain(body, rerun(nodeServices)));
    }
  };
}

export { runLinks };
