import type { Authenticated } from '../auth/authenticate.js';
import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import { runLinks } from '../runs/run-record.js';
import type { DetachedPlan } from '../plugins/plugin-api.js';
import type { Runs } from '../runs/runs.js';
import type { GatewayContext } from '../http/context.js';
import { keptFields } from '../parameters/index.js';
import type { Addressed, AuditDetailsCollected, ExecutingState, PayloadFiltered } from './pipeline-state.js';

type RunState = ExecutingState & Authenticated & PayloadFiltered & Partial<AuditDetailsCollected> & Partial<Addressed>;

/** An endpoint path as received, its segments decoded (a rerun sends it again, encoded once more). */
function decodedPath(path: string): string {
  try {
    return path.split('/').map(decodeURIComponent).join('/');
  } catch {
    return path;
  }
}

/**
 * Instead of step 9, for an endpoint whose type runs it as a job (`run: async` on exec): the run is recorded with
 * the request context and the call answers 202 at once with the run's id and links (docs/runs.md); the run starts
 * on whichever instance claims it. Any other endpoint goes on to step 9.
 */
export function runStep(runs: Runs, base: string): Stage<RunState> {
  const submit = async (ctx: GatewayContext<RunState>, plan: DetachedPlan): Promise<void> => {
    const { endpoint, caller, credential, payload, pathParams } = ctx.state;
    const id = await runs.commands.submit({
      endpoint,
      plan,
      method: ctx.method === 'HEAD' ? 'GET' : ctx.method,
      caller,
      actor: credential.kind,
      requestId: ctx.state.requestId,
      context: ctx.state.requestContext,
      payload,
      pathParams,
      keptPayload: keptFields(payload, endpoint.auditFields, endpoint.clientFilter.secretFields),
      ...(ctx.state.internalRun && { internal: ctx.state.internalRun }),
      ...(ctx.state.address && { address: { kind: ctx.state.address.kind, path: decodedPath(ctx.state.address.endpointPath) } }),
    });
    if (ctx.state.auditDetails) ctx.state.auditDetails.run_id = id;
    const links = runLinks(base, id);
    ctx.set('Location', links.self);
    sendData(ctx, { run_id: id, status: endpoint.approval ? 'awaiting_approval' : 'queued', links }, 202);
  };
  // Not async: an endpoint that does not run as a job goes on to step 9 without a promise of its own (an async
  // stage cost every proxied call a promise and three microtask turns around `next`).
  return (ctx, next) => {
    const plan = runs.plans.planOf(ctx.state.endpoint);
    return plan ? submit(ctx, plan) : next();
  };
}
