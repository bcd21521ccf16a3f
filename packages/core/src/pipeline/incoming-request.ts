import type { TLSSocket } from 'node:tls';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import type { IncomingRequest } from '../plugins/plugin-api.js';
import { forwardableHeaders } from './forwarded-headers.js';
import type { ExecutingState, PayloadFiltered } from './pipeline-state.js';

/** Headers the gateway itself sets towards an upstream that hears the request: a client's own are dropped. */
const REPLACED = /^(?:tkgate-|x-forwarded-|forwarded$|x-real-ip$)/;

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/**
 * The client's request as a type that forwards it needs it (call.incoming): the wildcard's rest and the query as
 * received, the body after client_filter, the headers it may pass on, and what X-Forwarded-* should say.
 */
export function incomingRequest(ctx: GatewayContext<ExecutingState>, trustProxy: boolean): IncomingRequest {
  const state = ctx.state as ExecutingState & Partial<PayloadFiltered>;
  const req = ctx.req;
  const headers = forwardableHeaders(req.headers);
  // Connection names further hop-by-hop headers of this one connection (RFC 9110 7.6.1).
  const named = String(req.headers.connection ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase());
  for (const name of Object.keys(headers)) if (REPLACED.test(name) || named.includes(name)) delete headers[name];
  const peer = req.socket.remoteAddress ?? 'unknown';
  const chain = trustProxy ? first(req.headers['x-forwarded-for']) : undefined;
  const pathRest = state.endpoint.template?.wildcard ? (state.pathMatch?.remainder ?? '') : '';
  const path = ctx.path.length > 1 && ctx.path.endsWith('/') ? ctx.path.slice(0, -1) : ctx.path;
  return {
    pathRest,
    trailingSlash: path !== ctx.path,
    gatewayPath: pathRest !== '' && path.endsWith(`/${pathRest}`) ? path.slice(0, -pathRest.length - 1) : path,
    query: ctx.querystring,
    body: bodyOf(state, first(req.headers['content-type'])),
    headers,
    forwarded: {
      for: chain ? `${chain}, ${peer}` : peer,
      proto: (trustProxy && first(req.headers['x-forwarded-proto'])) || ((req.socket as TLSSocket).encrypted ? 'https' : 'http'),
      host: (trustProxy && first(req.headers['x-forwarded-host'])) || (req.headers.host ?? ''),
      client: clientAddress(req, trustProxy),
    },
  };
}

function bodyOf(state: ExecutingState & Partial<PayloadFiltered>, contentType: string | undefined): IncomingRequest['body'] {
  if (!state.bodyRead) return undefined;
  if (state.rawBody) return state.rawBody;
  if (state.formText !== undefined) return { contentType: contentType ?? 'application/x-www-form-urlencoded', bytes: Buffer.from(state.formText) };
  return { contentType: 'application/json', bytes: Buffer.from(JSON.stringify(state.payload ?? {})) };
}
