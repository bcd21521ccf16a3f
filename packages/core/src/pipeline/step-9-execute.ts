import type { Authenticated, AuthenticatedState } from '../auth/authenticate.js';
import type { GatewayContext } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { StreamedResponse, UPGRADED } from '../plugins/plugin-api.js';
import { credentialOf, type Upgrades } from '../upgrade/upgrades.js';
import type { StreamEnds } from '../upgrade/stream-ends.js';
import { GatewayEndpointCall, type EndpointCallServices } from './endpoint-call.js';
import type { ExecutingState } from './pipeline-state.js';
import { sendAnswer } from './send-answer.js';
import { undeclaredCodeNotes } from './undeclared-codes.js';

export interface ExecuteServices extends EndpointCallServices {
  /** tkgate_upstream_duration_seconds: how long each endpoint's type took to answer. */
  metrics: GatewayMetrics;
  /** WebSocket upgrades: their places per user, their takeover, their end with their credential. */
  upgrades: Upgrades;
}

/**
 * Step 9: the endpoint type's plugin runs the request (its call: endpoint-call.ts), and its result is the
 * answer (send-answer.ts); a thrown GatewayError keeps its status and code. An upgrade is handed to upgrade/ once,
 * before the type runs (its place per user), and settled with the type's answer. The last stage: nothing after it.
 */
export function executeStep(s: ExecuteServices): Stage<ExecutingState> {
  const noteUndeclared = undeclaredCodeNotes(s.log);
  // Not async: the plugin's promise and one `then` on it (an async stage cost every call its own promise and a
  // turn for each await, the answer's included).
  return (ctx) => {
    const endpoint = ctx.state.endpoint;
    const type = endpoint.type;
    const started = performance.now();
    const upgrade = s.upgrades.admit({ request: ctx.req, state: ctx.state as ExecutingState & AuthenticatedState });
    const ended = (result: unknown) => {
      upgrade?.settle(result === UPGRADED);
      s.metrics.upstream(endpoint.toolkit, endpoint.path, (performance.now() - started) / 1000);
    };
    let running: Promise<unknown>;
    try {
      // A plugin's execute may answer a plain value, or throw before its promise: both as an async function's.
      running = Promise.resolve(type.execute(new GatewayEndpointCall(ctx, s, upgrade?.connection)));
    } catch (thrown) {
      running = Promise.reject(thrown);
    }
    return running.then(
      (result) => {
        ended(result);
        if (!(result instanceof StreamedResponse)) return sendAnswer(ctx, result, s.log);
        // A download is watched before it is sent: a body the plugin writes itself is sent within sendAnswer's
        // promise, which settles only at the download's end.
        watchDownload(ctx, s.upgrades.streamEnds);
        return sendAnswer(ctx, result, s.log);
      },
      (thrown: unknown) => {
        noteUndeclared(type, thrown);
        ended(undefined);
        throw thrown;
      },
    );
  };
}

/** A download still being sent ends with the credential it was opened with (upgrade/stream-ends.ts). */
function watchDownload(ctx: GatewayContext<ExecutingState>, streamEnds: StreamEnds): void {
  const credential = credentialOf(ctx.state as ExecutingState & Partial<Authenticated>);
  if (credential && !ctx.res.writableFinished && !ctx.res.destroyed) streamEnds.watch(credential, () => ctx.res.destroy(), ctx.res);
}
