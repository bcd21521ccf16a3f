import type { Database } from '../db/connect.js';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import { scopedLogger, type Logger } from '../log.js';
import type { EndpointCall, EndpointIdentity, IncomingRequest, RequestContext, TraceContext, UpgradeCall } from '../plugins/plugin-api.js';
import { forwardableHeaders } from './forwarded-headers.js';
import { incomingRequest } from './incoming-request.js';
import type { AuditDetailsCollected, ExecutingState } from './pipeline-state.js';

export interface EndpointCallServices {
  db: Database;
  log: Logger;
  /** server.trust_proxy: the client address is the last X-Forwarded-For entry. */
  trustProxy: boolean;
}

const NOTHING_TO_STOP = () => undefined;

/** Runs `listener` once if the client closes the connection before the response is complete. */
function watchClientGone(ctx: GatewayContext, listener: () => void): () => void {
  if (ctx.res.destroyed || ctx.req.socket.destroyed) {
    listener();
    return NOTHING_TO_STOP;
  }
  const onClose = () => ctx.res.writableFinished || listener();
  // `on`, not `once`: a response closes once, and once's wrapper (a function, its state and a bind) cost every call.
  ctx.res.on('close', onClose);
  return () => ctx.res.off('close', onClose);
}

/** Aborts when the client closes the connection before the response is complete. */
function clientGone(ctx: GatewayContext): AbortSignal {
  const controller = new AbortController();
  watchClientGone(ctx, () => controller.abort(new Error('the client closed the connection')));
  return controller.signal;
}

/**
 * What the plugin gets. `signal`, `headers`, `clientAddress` and `log` are made on first use: most
 * endpoints read none of them, and an AbortSignal per request showed in the profiles (docs/performance.md,
 * "Reads on the request path").
 * A class, so the getters live on its prototype instead of being new closures on every request.
 */
export class GatewayEndpointCall implements EndpointCall<unknown> {
  readonly config: unknown;
  readonly context: RequestContext;
  readonly requestId: string;
  readonly callerId: number;
  readonly method: string;
  readonly db: Database;
  readonly endpoint: EndpointIdentity;
  readonly trace: TraceContext;
  private madeSignal?: AbortSignal;
  private madeHeaders?: Record<string, string>;
  private madeLog?: Logger;

  constructor(
    private readonly ctx: GatewayContext<ExecutingState>,
    private readonly services: EndpointCallServices,
    /** A WebSocket upgrade's connection, admitted by step 9 (upgrade/upgrades.ts). */
    readonly upgrade: UpgradeCall | undefined,
  ) {
    const endpoint = ctx.state.endpoint;
    this.config = endpoint.typeConfig;
    this.context = ctx.state.requestContext;
    this.requestId = ctx.state.requestId;
    // Toolkit requests are authenticated (step 3) before any endpoint runs.
    this.callerId = ctx.state.caller!.id;
    this.method = ctx.method;
    this.db = services.db;
    this.endpoint = { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint };
    this.trace = ctx.state.trace;
  }

  get clientAddress(): string {
    return clientAddress(this.ctx.req, this.services.trustProxy);
  }

  get headers(): Record<string, string> {
    return (this.madeHeaders ??= forwardableHeaders(this.ctx.request.headers));
  }

  get incoming(): IncomingRequest {
    return incomingRequest(this.ctx, this.services.trustProxy);
  }

  get signal(): AbortSignal {
    return (this.madeSignal ??= clientGone(this.ctx));
  }

  /** Into the audit event of an audited call (audit-call-step.ts); nothing for another. */
  addAuditDetails(details: Record<string, unknown>): void {
    const collected = (this.ctx.state as ExecutingState & Partial<AuditDetailsCollected>).auditDetails;
    if (collected && details !== null && typeof details === 'object') Object.assign(collected, details);
  }

  /** An arrow property, not a method: plugins pass it on unbound (`whenClientGone: call.onClientGone`). */
  readonly onClientGone = (listener: () => void): (() => void) => watchClientGone(this.ctx, listener);

  get log(): Logger {
    const { endpoint, requestId } = this;
    return (this.madeLog ??= scopedLogger(this.services.log, {
      plugin: this.ctx.state.endpoint.type.plugin,
      request_id: requestId,
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
    }));
  }
}
