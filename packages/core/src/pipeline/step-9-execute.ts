import type { Stage } from '../http/stage.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { GatewayEndpointCall, type EndpointCallServices, type ExecutingState } from './endpoint-call.js';
import { sendAnswer } from './send-answer.js';
import type { Duplex } from 'node:stream';
import type { Authenticated, AuthenticatedState } from '../auth/authenticate.js';
import type { GatewayContext } from '../http/context.js';
import { StreamedResponse } from '../plugins/plugin-api.js';
import type { StreamCredential, StreamEnds } from './stream-ends.js';
import { upgradeOf } from '../http/upgrade.js';
import { UPGRADED } from '../plugins/plugin-api.js';
import type { OpenSockets } from './open-sockets.js';
import { undeclaredCodeNotes } from './undeclared-codes.js';

export interface ExecuteServices extends EndpointCallServices {
  /** tkgate_upstream_duration_seconds: how long each endpoint's type took to answer. */
  metrics: GatewayMetrics;
  /** WebSockets open per user (websocket.max_per_user). */
  sockets: OpenSockets;
  /** The streams to end with their credential. */
  streamEnds: StreamEnds;
}

/**
 * Step 9: the endpoint type's plugin runs the request (its call: endpoint-call.ts), and its result is the
 * answer (send-answer.ts); a thrown GatewayError keeps its status and code. The last stage: nothing after it.
 */
export function executeStep(s: ExecuteServices): Stage<ExecutingState> {
  const noteUndeclared = undeclaredCodeNotes(s.log);
  // Not async: the plugin's promise and one `then` on it (an async stage cost every call its own promise and a
  // turn for each await, the answer's included).
  return (ctx) => {
    const endpoint = ctx.state.endpoint;
    const type = endpoint.type;
    const started = performance.now();
    const upgrade = upgradeOf(ctx.req);
    const settle = upgrade && s.sockets.reserve((ctx.state as ExecutingState & AuthenticatedState).caller.id);
    const ended = (result: unknown) => {
      settle?.(result === UPGRADED ? upgrade!.socket : undefined);
      s.metrics.upstream(endpoint.toolkit, endpoint.path, (performance.now() - started) / 1000);
    };
    let running: Promise<unknown>;
    try {
      // A plugin's execute may answer a plain value, or throw before its promise: both as an async function's.
      running = Promise.resolve(type.execute(new GatewayEndpointCall(ctx, s)));
    } catch (thrown) {
      running = Promise.reject(thrown);
    }
    return running.then(
      (result) => {
        ended(result);
        // A download is watched before it is sent: a body the plugin writes itself is sent within sendAnswer's
        // promise, which settles only at the download's end.
        const streamed = result instanceof StreamedResponse;
        if (streamed) watchStream(ctx, result, upgrade?.socket, s.streamEnds);
        const sending = sendAnswer(ctx, result, s.log);
        if (streamed) return sending;
        if (sending) return sending.then(() => watchStream(ctx, result, upgrade?.socket, s.streamEnds));
        watchStream(ctx, result, upgrade?.socket, s.streamEnds);
        return undefined;
      },
      (thrown: unknown) => {
        noteUndeclared(type, thrown);
        ended(undefined);
        throw thrown;
      },
    );
  };
}

/** A WebSocket taken over, or a download still being sent, ends with the credential it was opened with (stream-ends.ts). */
function watchStream(ctx: GatewayContext<ExecutingState>, result: unknown, socket: Duplex | undefined, streamEnds: StreamEnds): void {
  const state = ctx.state as ExecutingState & Partial<Authenticated> & { credentialEnd?: () => void };
  const credential: StreamCredential | undefined = state.session
    ? { kind: 'session', hash: state.session.tokenHash }
    : state.apiKey
      ? { kind: 'api_key', hash: state.apiKey.keyHash }
      : undefined;
  if (!credential) return;
  if (result === UPGRADED && socket && !socket.destroyed) streamEnds.watch(credential, state.credentialEnd ?? (() => socket.destroy()), socket);
  else if (result instanceof StreamedResponse && !ctx.res.writableFinished && !ctx.res.destroyed)
    streamEnds.watch(credential, () => ctx.res.destroy(), ctx.res);
}
