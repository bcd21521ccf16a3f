import type { Next } from 'koa';
import type { Authenticated } from '../auth/authenticate.js';
import type { InternalCalls } from '../auth/internal-calls.js';
import { describeDatabaseError } from '../db/database-errors.js';
import { coreError, unauthorized, unavailable } from '../errors.js';
import { sendData } from '../http/envelope.js';
import type { GatewayContext, GatewayState } from '../http/context.js';
import { asPayloadObject, parseReadBody, readPayloadBody } from '../http/payload-body.js';
import type { Stage } from '../http/stage.js';
import type { Logger } from '../log.js';
import { matchRoute } from '../toolkits/route-match.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { Claim, DeliveryAnswer } from '../triggers/trigger-deliveries.js';
import { TriggerDeliveries } from '../triggers/trigger-deliveries.js';
import type { Triggers } from '../triggers/triggers.js';
import type { AddressedState, EndpointFound, PrereadBody, SignedCall, ToolkitFound, TriggerCalled } from './pipeline-state.js';

/**
 * In place of authentication, for a call without `Authorization` of an endpoint with `trigger`: it goes on
 * unauthenticated, marked `signed`, and the trigger stage (after step 2) authenticates it by its signature. Any
 * other call is authenticated as always; one with a credential is never a signed call. Costs a call with a
 * credential one header check.
 */
export function signedOr(
  registry: ToolkitRegistry,
  internalCalls: InternalCalls | undefined,
  authenticate: Stage<GatewayState, Authenticated>,
): Stage<AddressedState, Authenticated> {
  const isTriggered = (ctx: GatewayContext<AddressedState>): boolean => {
    const { kind, toolkit: name, endpointPath } = ctx.state.address;
    const toolkit = registry.snapshot.get(name);
    if (!toolkit || toolkit.kind !== kind || internalCalls?.knows(ctx.req)) return false;
    const match = matchRoute(toolkit, endpointPath, ctx.method);
    return match !== undefined && 'endpoint' in match && match.endpoint.trigger !== undefined;
  };
  return (ctx, next) => {
    if (ctx.req.headers.authorization !== undefined || !isTriggered(ctx)) return authenticate(ctx, next);
    (ctx.state as AddressedState & SignedCall).signed = true;
    return next();
  };
}

type TriggerState = AddressedState & ToolkitFound & EndpointFound & SignedCall & Authenticated;

/** The server's bounds on any request body (server.max_body_bytes, server.body_timeout). */
interface BodyLimits {
  max_body_bytes: number;
  body_timeout_ms: number;
}

export interface TriggerStepServices {
  triggers: Triggers;
  server: BodyLimits;
  log: Logger;
}

/** How long a redelivery waits for the first delivery's answer, polling, before it is told to come back. */
const PENDING_WAIT_MS = 10_000;
const PENDING_POLL_MS = 100;
/** Answers a redelivery gets again; any other (refused: 4xx; failed, or nothing run: 5xx) is forgotten and runs again. */
const remembered = (status: number): boolean => status >= 200 && status < 300;

/**
 * After step 2, a signed call (docs/triggers.md): the raw body read once, within the endpoint's and the server's
 * limits, and its signature checked in constant time (401 invalid_signature, the reason in the log only); `when`
 * (200 {"ignored": true}); the delivery id claimed across instances, a redelivery answered as the first delivery
 * was; the call authenticated as the trigger's `as` user; the payload built by `payload_map` for step 4. Any
 * other call goes on: one property check.
 */
export function triggerStep(s: TriggerStepServices): Stage<TriggerState, TriggerCalled> {
  const { triggers, log } = s;
  const refuse = (ctx: GatewayContext<TriggerState>, reason: string): never => {
    log.warn('signed call refused', { request_id: ctx.state.requestId, toolkit: ctx.state.endpoint.toolkit, endpoint: ctx.state.endpoint.path, reason });
    throw coreError('invalid_signature', 'the request is not signed as this endpoint requires');
  };
  const signed = async (ctx: GatewayContext<TriggerState>, next: Next): Promise<void> => {
    const { endpoint } = ctx.state;
    const trigger = endpoint.trigger;
    // The method's endpoint (step 2) has no trigger: an unauthenticated call, as any other.
    if (!trigger) throw unauthorized();
    const filter = endpoint.clientFilter;
    const limits = {
      endpointMax: filter.maxBodyBytes,
      serverMax: s.server.max_body_bytes,
      allowedContentTypes: filter.allowedContentTypes,
      timeoutMs: s.server.body_timeout_ms,
    };
    const read = await readPayloadBody(ctx, limits, true);
    const problem = await triggers.verify(trigger, read.bytes!, ctx.req.headers);
    if (problem) refuse(ctx, problem);
    const body = asPayloadObject(parseReadBody(read));
    if (!triggers.matches(trigger, ctx.req.headers, body)) {
      sendData(ctx, { ignored: true });
      return;
    }
    const caller = await triggers.callerOf(trigger.as);
    if (!caller || caller.disabled) {
      log.warn('signed call refused: its trigger.as user does not exist or is disabled', { request_id: ctx.state.requestId, user: trigger.as });
      throw coreError('invalid_signature', 'the request is not signed as this endpoint requires');
    }
    const delivery = triggers.deliveryOf(trigger, ctx.req.headers, body) ?? null;
    const state = ctx.state as TriggerState & TriggerCalled;
    state.caller = caller;
    state.credential = { kind: 'trigger', id: trigger.scheme };
    state.trigger = { scheme: trigger.scheme, delivery };
    state.internalRun = { actor: { trigger: trigger.scheme, delivery } };
    const preread: PrereadBody = { body: triggers.payloadOf(trigger, body), form: read.form };
    if (!trigger.payloadMap) {
      // Unmapped, the body goes on as received: a form's text, or a body of another allowed type (not parsed).
      if (read.form && read.text !== undefined) preread.formText = read.text;
      if (read.raw) preread.rawBody = read.raw;
    }
    state.preread = preread;
    if (delivery === null) return next();
    return once(ctx, next, TriggerDeliveries.keyOf(endpoint.toolkit, endpoint.path, delivery), delivery);
  };
  /** The first delivery of an id runs and its answer is kept; a redelivery gets that answer with data.duplicate. */
  const once = async (ctx: GatewayContext<TriggerState>, next: Next, key: string, delivery: string): Promise<void> => {
    const where = { toolkit: ctx.state.endpoint.toolkit, endpoint: ctx.state.endpoint.path, delivery };
    const deadline = Date.now() + PENDING_WAIT_MS;
    let claim: Claim = await claimed(() => triggers.deliveries.claim(key, where));
    while (!claim.claimed && 'pending' in claim && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, PENDING_POLL_MS));
      claim = await claimed(() => triggers.deliveries.claim(key, where));
    }
    if (!claim.claimed) {
      if ('answer' in claim) return answerAgain(ctx, claim.answer);
      throw coreError('unavailable', 'the first delivery of this id is still being answered; try again shortly', { headers: { 'Retry-After': '10' } });
    }
    try {
      await next();
    } catch (err) {
      await triggers.deliveries.forget(key).catch((cause: unknown) => log.warn('trigger delivery not forgotten', { err: cause }));
      throw err;
    }
    if (!remembered(ctx.status)) {
      await triggers.deliveries.forget(key).catch((cause: unknown) => log.warn('trigger delivery not forgotten', { err: cause }));
      return;
    }
    const answer = { status: ctx.status, body: envelopeOf(ctx.body), location: ctx.response.get('Location') || null };
    await triggers.deliveries.complete(key, answer).catch((cause: unknown) => log.warn('trigger delivery answer not recorded', { err: cause }));
  };
  return (ctx, next) => (ctx.state.signed ? signed(ctx, next) : next());
}

/** A claim the database refused is 503 (nothing ran: the provider retries). */
async function claimed(claim: () => Promise<Claim>): Promise<Claim> {
  try {
    return await claim();
  } catch (err) {
    throw unavailable({ what: 'trigger delivery claim', ...describeDatabaseError(err) }, 'the delivery could not be recorded; nothing ran, try again');
  }
}

/** The answer's envelope as JSON, when it is one (an object, or JSON text); else null. */
function envelopeOf(body: unknown): unknown {
  if (typeof body === 'string') {
    try {
      return JSON.parse(body);
    } catch {
      return null;
    }
  }
  if (body !== null && typeof body === 'object' && !Buffer.isBuffer(body) && typeof (body as { pipe?: unknown }).pipe !== 'function') return body;
  return null;
}

/** The first delivery's status and envelope again, `data.duplicate: true` added and this request's id. */
function answerAgain(ctx: GatewayContext<TriggerState>, first: DeliveryAnswer): void {
  const envelope = (first.body ?? {}) as { data?: unknown };
  const data = envelope.data !== null && typeof envelope.data === 'object' && !Array.isArray(envelope.data) ? envelope.data : {};
  if (first.location) ctx.set('Location', first.location);
  sendData(ctx, { ...data, duplicate: true }, first.status);
}
