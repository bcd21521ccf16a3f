import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { authenticateSessionOrKey, machineScope, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import { forbidden, invalidPayload, notFound, type FieldProblem } from '../errors.js';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import {
  fireCursor,
  FIRES_DEFAULT_LIMIT,
  FIRES_MAX_LIMIT,
  listSchedules,
  PREVIEW_MAX,
  previewSchedule,
  scheduleEntries,
  scheduleFires,
  setSchedulePaused,
  type ScheduleEntry,
} from './schedule-commands.js';
import type { Schedules } from './schedules.js';

export interface ScheduleRoutesServices {
  config: ServerConfig;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  registry: ToolkitRegistry;
  audit: AuditTrail;
  schedules?: Schedules;
}

interface Found {
  entry: ScheduleEntry;
}
type ScheduleState = AuthenticatedState & Found;

/** The endpoint's `runs.view_power` or `runs.cancel_power` (default auth.admin_power). */
function powerOf(endpoint: CompiledEndpoint, which: 'viewPower' | 'cancelPower', adminPower: number): number {
  return endpoint.type.detached?.(endpoint.typeConfig)?.[which] ?? adminPower;
}

/** Whether the caller sees an endpoint's schedules: one who may call it, or has its runs.view_power (or is an admin). */
function sees(ctx: GatewayContext<AuthenticatedState>, endpoint: CompiledEndpoint, adminPower: number): boolean {
  const scope = machineScope(ctx.state);
  if (scope && !scope.has(endpoint.toolkit)) return false;
  const { power } = ctx.state.caller;
  return power >= endpoint.minPower || power >= powerOf(endpoint, 'viewPower', adminPower) || power >= adminPower;
}

const scheduleNotFound = () => notFound('schedule_not_found', 'no such schedule');

function text(ctx: GatewayContext, name: string): string | undefined {
  const value = ctx.query[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** A whole number query parameter from 1 to `max`. */
function count(ctx: GatewayContext, name: string, fallback: number, max: number, problems: FieldProblem[]): number {
  const value = text(ctx, name);
  if (value === undefined) return fallback;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    problems.push({ field: name, rule: 'range', message: `${name} must be a whole number from 1 to ${max}` });
    return fallback;
  }
  return Number(value);
}

const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Schedules' routes (docs/schedules.md): the list, one schedule's fires and preview, pause and resume. `{id}` is the
 * schedule id percent-encoded as one path segment (the router decodes it). Authenticated as toolkit calls are.
 */
export function scheduleRoutes(s: ScheduleRoutesServices): RouteContribution {
  const adminPower = s.config.auth.admin_power;
  const authenticate = authenticateSessionOrKey(s, { countsAsUse: true });
  const entries = () => scheduleEntries(s.registry.snapshot);

  const find: Stage<AuthenticatedState, Found> = (ctx, next) => {
    const id = (ctx as unknown as { params: Record<string, string> }).params.id!;
    const entry = entries().find((each) => each.schedule.id === id);
    if (!entry || !sees(ctx, entry.endpoint, adminPower)) throw scheduleNotFound();
    (ctx.state as ScheduleState).entry = entry;
    return next();
  };
  const chain = (stage: Stage<ScheduleState>) => StageList.start().then('authenticate', authenticate).then('schedule', find).then('stage', stage).middleware;

  const store = () => {
    if (!s.schedules) throw scheduleNotFound();
    return s.schedules.store;
  };

  const list: Stage<AuthenticatedState> = async (ctx) => {
    const visible = scheduleEntries(s.registry.snapshot, (endpoint) => sees(ctx, endpoint, adminPower));
    sendData(ctx, { schedules: visible.length === 0 ? [] : await listSchedules(store(), visible) });
  };

  const fires: Stage<ScheduleState> = async (ctx) => {
    const problems: FieldProblem[] = [];
    const limit = count(ctx, 'limit', FIRES_DEFAULT_LIMIT, FIRES_MAX_LIMIT, problems);
    const cursorText = text(ctx, 'cursor');
    const before = cursorText === undefined ? undefined : fireCursor(cursorText);
    if (cursorText !== undefined && before === undefined)
      problems.push({ field: 'cursor', rule: 'format', message: 'cursor must be a next_cursor of an earlier page' });
    if (problems.length > 0) throw invalidPayload(problems, 'the query string is invalid');
    sendData(ctx, await scheduleFires(store(), ctx.state.entry.schedule.id, limit, before));
  };

  const preview: Stage<ScheduleState> = (ctx) => {
    const problems: FieldProblem[] = [];
    const n = count(ctx, 'n', 10, PREVIEW_MAX, problems);
    const fromText = text(ctx, 'from');
    let from = Date.now();
    if (fromText !== undefined) {
      from = RFC_3339.test(fromText) ? Date.parse(fromText) : NaN;
      if (Number.isNaN(from)) problems.push({ field: 'from', rule: 'format', message: 'from must be an RFC 3339 time, e.g. 2027-03-27T00:00:00Z' });
    }
    if (problems.length > 0) throw invalidPayload(problems, 'the query string is invalid');
    sendData(ctx, previewSchedule(ctx.state.entry.schedule, from, n));
  };

  const pause =
    (paused: boolean): Stage<ScheduleState> =>
    async (ctx) => {
      const { entry, caller, credential } = ctx.state;
      if (caller.power < powerOf(entry.endpoint, 'cancelPower', adminPower) && caller.power < adminPower)
        throw forbidden(`you may not ${paused ? 'pause' : 'resume'} this schedule (the endpoint's runs.cancel_power)`);
      await setSchedulePaused(store(), entry, paused, caller.username, (action, { endpoint }, details) =>
        s.audit.record({
          requestId: ctx.state.requestId,
          actorUserId: caller.id,
          actor: credential.kind,
          credential: credential.id,
          client: clientAddress(ctx.req, s.config.server.trust_proxy),
          action,
          toolkit: endpoint.toolkit,
          endpoint: endpoint.path,
          status: 200,
          code: 'ok',
          details,
        }),
      );
      const [data] = await listSchedules(store(), [entry]);
      sendData(ctx, data);
    };

  return ({ base, add }) => {
    add('GET', `${base}/schedules`, 'schedules', ...StageList.start().then('authenticate', authenticate).then('list', list).middleware);
    add('GET', `${base}/schedules/:id/fires`, 'schedules/:id/fires', ...chain(fires));
    add('GET', `${base}/schedules/:id/preview`, 'schedules/:id/preview', ...chain(preview));
    add('POST', `${base}/schedules/:id/pause`, 'schedules/:id/pause', ...chain(pause(true)));
    add('POST', `${base}/schedules/:id/resume`, 'schedules/:id/resume', ...chain(pause(false)));
  };
}
