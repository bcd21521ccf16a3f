import type { GatewayState } from '../http/context.js';
import type { RequestContext } from '../plugins/plugin-api.js';
import type { CompiledEndpoint, CompiledToolkit } from '../toolkits/compiled-toolkit.js';
import type { PathMatch } from '../toolkits/path-templates.js';
import type { RawBody } from '../http/payload-body.js';

/**
 * A toolkit request's state, stage by stage (toolkit-pipeline.ts): each stage's type is what the stages
 * before it have added, so a step reads what it needs without `!`.
 */

/** The router's match: the URL's parts ({base}/tk/<kind>/<toolkit>[/<endpoint path>]). */
export interface Addressed {
  address: { kind: string; toolkit: string; endpointPath: string };
}
/** Step 1. */
export interface ToolkitFound {
  toolkit: CompiledToolkit;
}
/** Step 2. */
export interface EndpointFound {
  endpoint: CompiledEndpoint;
  /** Ends the request's count on its endpoint version (step 2); called once its answer is out. */
  leaveEndpoint?: () => void;
  /** A template endpoint's parameters and remainder as received (percent-encoded). */
  pathMatch?: PathMatch;
}
/** A call without a credential of an endpoint with `trigger` (trigger-step.ts): its signature is its credential. */
export interface SignedCall {
  signed?: true;
}
/** A body the trigger stage read (its signature is on the bytes) and mapped: step 4 filters it, reading nothing. */
export interface PrereadBody {
  body: Record<string, unknown>;
  form: boolean;
  /** A form body as received, when the payload is its fields unmapped. */
  formText?: string;
  /** A body of another allowed type, unmapped: passed as received (PayloadFiltered.rawBody). */
  rawBody?: RawBody;
}
/** A verified signed call: its scheme and the provider's delivery id (audit and run actor), and its body. */
export interface TriggerCalled {
  trigger?: { scheme: string; delivery: string | null };
  preread?: PrereadBody;
}
/** Step 4. */
export interface PayloadFiltered {
  payload: Record<string, unknown>;
  /** A template endpoint's path parameters, decoded and checked by path_rules (`path_params` of the context). */
  pathParams?: Record<string, unknown>;
  /** A form body as received (a type that forwards the request sends it so); a JSON body is re-serialised from the payload. */
  formText?: string;
  /** Whether the request had a body (the payload came from it, or it is rawBody). */
  bodyRead?: boolean;
  /** A body of another allowed type (text/plain, XML, octet-stream): not parsed (the payload is empty), passed as received. */
  rawBody?: RawBody;
}
/** Step 5. */
export interface DbContextRead {
  dbContext: Record<string, unknown>;
}
/** Step 6. */
export interface GroupFound {
  toolkitGroup: string | null;
}
/** Steps 7 and 8. */
export interface ContextMade {
  requestContext: RequestContext;
}

/** The audit stage, for an audited endpoint only: what the plugin adds to the event (call.addAuditDetails). */
export interface AuditDetailsCollected {
  auditDetails: Record<string, unknown>;
}

export type AddressedState = GatewayState & Addressed;

/** The state step 9 runs on: the endpoint, and the request context after overwrite_wrapping. */
export type ExecutingState = GatewayState & EndpointFound & ContextMade;
