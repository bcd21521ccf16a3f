import type { IncomingMessage, RequestListener } from 'node:http';
import { inject } from 'light-my-request';
import type { Authenticated } from './authenticate.js';
import type { EndpointCall } from '../parameters/field-choices.js';

/** What a run an internal call starts carries beyond the call itself (runs/run-commands.ts reads it). */
export interface InternalRunOptions {
  /** The run's actor details (`{kind: "schedule", schedule}`), merged over the credential's kind. */
  actor?: Readonly<Record<string, unknown>>;
  /** The run this one reruns (a fleet run's failed nodes). */
  rerunOf?: string;
  /** Only these of the endpoint's nodes (a rerun's). */
  nodes?: readonly string[];
}

/** Who an internal call acts as, and what its run carries. */
export interface InternalCaller {
  /** The caller and credential as authentication would have found them: a schedule's `as` user, or the caller itself. */
  authenticated: Authenticated;
  run?: InternalRunOptions;
}

/** A call of one of the gateway's own toolkit endpoints, as an internal caller. */
export type InternalCall = EndpointCall<InternalCaller>;

/** The answer of an internal call: its status, and its body as JSON (the envelope), or undefined for another body. */
export interface InternalAnswer {
  status: number;
  body: unknown;
  headers: Readonly<Record<string, string | string[] | number | undefined>>;
}

/** The address internal calls come from, in access lines and rate limits (a client budget of its own). */
export const INTERNAL_ADDRESS = '127.0.0.1';

/**
 * Calls the gateway makes to its own toolkit endpoints: a schedule's fire as its `as` user, a field's choices as
 * the caller, a fleet run's rerun as the person asking for it. Each is an ordinary request through the one Koa stack
 * (light-my-request hands the app a request object without a socket), so every rule of a call holds for it: the
 * nine steps, rate limits, the audit trail, the run's queue. Its identity is handed to authentication with the
 * request object itself (authenticate.ts asks `callerOf`), never in a header: no client can send one.
 */
export class InternalCalls {
  private handler: RequestListener | undefined;
  private readonly callers = new WeakMap<IncomingMessage, InternalCaller>();

  constructor(private readonly base: string) {}

  /** The app's request handler, once it is made (the app needs this object first). */
  attach(handler: RequestListener): void {
    this.handler = handler;
  }

  /** Whether a request is an internal call whose identity is still to be handed out. */
  knows(req: IncomingMessage): boolean {
    return this.callers.has(req);
  }

  /** The identity of an internal call's request, handed out once. */
  callerOf(req: IncomingMessage): InternalCaller | undefined {
    const caller = this.callers.get(req);
    if (caller) this.callers.delete(req);
    return caller;
  }

  async call(call: InternalCall): Promise<InternalAnswer> {
    const handler = this.handler;
    if (!handler) throw new Error('internal calls before the app was made');
    const path = call.path.split('/').map(encodeURIComponent).join('/');
    const query = call.query && Object.keys(call.query).length > 0 ? `?${new URLSearchParams(call.query as Record<string, string>)}` : '';
    const body = call.payload === undefined ? undefined : JSON.stringify(call.payload);
    const response = await inject(
      (req, res) => {
        this.callers.set(req, call.as);
        handler(req, res);
      },
      {
        method: call.method as 'GET',
        url: `${this.base}/tk/${encodeURIComponent(call.kind)}/${encodeURIComponent(call.toolkit)}/${path}${query}`,
        headers: {
          'user-agent': 'tkgate-internal',
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(call.requestId !== undefined && { 'x-request-id': call.requestId }),
        },
        ...(body !== undefined && { payload: body }),
        remoteAddress: INTERNAL_ADDRESS,
      },
    );
    let parsed: unknown;
    if (String(response.headers['content-type'] ?? '').startsWith('application/json')) {
      try {
        parsed = JSON.parse(response.payload);
      } catch {
        parsed = undefined;
      }
    }
    return { status: response.statusCode, body: parsed, headers: response.headers };
  }
}
