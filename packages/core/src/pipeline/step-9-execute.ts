import type { Stage } from '../http/stage.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { GatewayEndpointCall, type EndpointCallServices, type ExecutingState } from './endpoint-call.js';
import { sendAnswer } from './send-answer.js';
import type { AuthenticatedState } from '../auth/authenticate.js';
import { upgradeOf } from '../http/upgrade.js';
import { UPGRADED } from '../plugins/plugin-api.js';
import type { OpenSockets } from './open-sockets.js';
import { undeclaredCodeNotes } from './undeclared-codes.js';

export interface ExecuteServices extends EndpointCallServices {
  /** tkgate_upstream_duration_seconds: how long each endpoint's type took to answer. */
  metrics: GatewayMetrics;
  /** WebSockets open per user (websocket.max_per_user). */
  sockets: OpenSockets;
}

/**
 * Step 9: the endpoint type's plugin runs the request (its call: endpoint-call.ts), and its result is the
 * answer (send-answer.ts); a thrown GatewayError keeps its status and code. The last stage: nothing after it.
 */
export function executeStep(s: ExecuteServices): Stage<ExecutingState> {
  const noteUndeclared = undeclaredCodeNotes(s.log);
  return async (ctx) => {
    const endpoint = ctx.state.endpoint;
    const type = endpoint.type;
    const started = performance.now();
    const upgrade = upgradeOf(ctx.req);
    const settle = upgrade && s.sockets.reserve((ctx.state as ExecutingState & AuthenticatedState).caller.id);
    let result: unknown;
    try {
      result = await type.execute(new GatewayEndpointCall(ctx, s));
    } catch (thrown) {
      noteUndeclared(type, thrown);
      throw thrown;
    } finally {
      settle?.(result === UPGRADED ? upgrade!.socket : undefined);
      s.metrics.upstream(endpoint.toolkit, endpoint.path, (performance.now() - started) / 1000);
    }
    await sendAnswer(ctx, result, s.log);
  };
}
