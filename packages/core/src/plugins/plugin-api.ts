/**
 * The public plugin API: everything a third-party endpoint type needs, and nothing core-internal.
 * The built-in types (@tkgate/plugin-internal, -http, -exec) use exactly this. See docs/plugins.md.
 *
 * Versioning (docs/plugins.md, "Compatibility"): this API is version MAJOR.MINOR (api-version.ts). An
 * addition bumps the minor, an incompatible change the major. A plugin writes the range it was built
 * for as a literal in its own code (`apiVersion: '^1.1'`), so a host outside it refuses it at boot.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable, Writable } from 'node:stream';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Database } from '../db/connect.js';
import type { PreparedRead, PreparedReads } from '../db/prepared-reads.js';
import type { ErrorCodeDeclaration } from '../error-codes.js';
import type { Logger } from '../log.js';
import type { DatabaseSchema } from '../db/database-schema.js';
import type { MiddlewarePoint, PluginMiddleware } from './plugin-middleware.js';
import type { ResponseDescription } from './response-description.js';
import type { TraceContext } from '../tracing/trace-api.js';
import type { SecretReference } from '../secrets/secret-reference.js';
import type { SecretScheme } from '../secrets/secret-schemes.js';
import type { SecretStreamMask } from '../secrets/secret-mask.js';
import type { FleetSettings } from '../config/fleet-settings.js';

export type { FleetSettings };

export type { TraceContext, ChildSpan, SpanOptions, SpanAttributes } from '../tracing/trace-api.js';

export type { MiddlewarePoint, PluginMiddleware };

/**
 * The plugin API versions a plugin works with: `'^1'`, `'^1.1'`, `'1.x'`, `'^1.1 || ^2'`, a number
 * (a major) or `{ major, minor }`. Same major, and a minor at most the host's.
 */
export type ApiRange = string | number | { major: number; minor?: number };

/** What a plugin module exports as its default export (or as `plugin`). */
export interface TkgatePlugin {
  /** For logs and errors; also the key of its `plugin_options` and of its migrations' record. */
  name: string;
  /** A literal in the plugin's own code, never read from the host's core. */
  apiVersion: ApiRange;
  register(api: PluginApi): void | Promise<void>;
  /**
   * Knex migrations of the plugin's own tables, by name (run in name order) by `tkgate migrate` and
   * `tkgate start`, recorded per plugin. They never touch tkgate's tables.
   */
  migrations?: PluginMigrations;
}

export type PluginMigrations = Readonly<Record<string, PluginMigration>>;

export interface PluginMigration {
  up(db: Database): Promise<unknown>;
  down?(db: Database): Promise<unknown>;
}

export interface PluginApi {
  /** The host's plugin API version, "MAJOR.MINOR": feature-detect additions with it. */
  readonly apiVersion: string;
  /** Lines carry `plugin: <your name>`. */
  readonly log: Logger;
  readonly db: Database;
  /** `plugin_options.<plugin name>` of the server configuration ({} when absent), unvalidated. */
  readonly options: Readonly<Record<string, unknown>>;
  /** The options validated by a schema (defaults applied); a problem refuses the boot with its key path. */
  readOptions<T>(schema: StandardSchemaV1<unknown, T>): Promise<T>;
  /**
   * The error codes this plugin answers with, besides core's (error-codes.ts): status 400-599 and one
   * sentence each. A code core or another plugin declares with another status refuses the boot.
   */
  declareErrors(codes: Readonly<Record<string, ErrorCodeDeclaration>>): void;
  registerEndpointType<Config>(type: EndpointType<Config>): void;
  /** A named in-process function, run by `type: internal` endpoints with `handler: <name>`. */
  registerFunction(name: string, fn: NamedFunction): void;
  /** A function any plugin registered (looked up when a request runs, so load order does not matter). */
  getFunction(name: string): NamedFunction | undefined;
  /**
   * A read compiled once and run from a prepared-statement cache: `build` gets `param(i)`, a stand-in for
   * the i-th value given to `all`, and returns a knex select. Use it for reads on the request path.
   */
  prepareRead: PreparedReads['prepare'];
  /** Metrics of the plugin's own, served with the gateway's (no-ops when metrics.enabled is false). */
  readonly metrics: PluginMetrics;
  /** Called once when the gateway stops (after in-flight requests have finished), or when its boot fails. */
  onClose(cleanup: () => void | Promise<void>): void;
  /**
   * (1.3) Puts a Koa middleware `(ctx, next)` into the request path at a named point: `request` (every
   * request), `before:authenticate`, `after:<step>` or `before:execute` (toolkit requests). Any middleware
   * of the Koa ecosystem works unchanged; the order rules are in docs/plugins.md, "Middleware".
   */
  useMiddleware(point: MiddlewarePoint, middleware: PluginMiddleware): void;
  /**
   * (1.5) Secrets kept outside toolkit files: `{ secret: "env:NAME" }`, `{ secret: "file:PATH" }` or a scheme a
   * plugin registers here. Core opens every reference of an endpoint's configuration at load (one that cannot be
   * opened refuses the toolkit); the endpoint reads the current value per call, and masks what it passes on.
   */
  readonly secrets: PluginSecrets;
  /**
   * (1.6) The server configuration's `fleet` section (docs/fleet.md): the inventory's sources, `known_hosts`, and the
   * power that lists the nodes (auth.admin_power when unset). For a type that runs on many hosts.
   */
  readonly fleet: FleetSettings;
  /**
   * (1.6) A read-only route of the plugin's own under `{base}` (`fleet/nodes`): authenticated as the runs' routes are
   * (a session or an API key), below `minPower` 403 `forbidden`, its result answered as `data`.
   */
  registerRoute(route: PluginRoute): void;
}

/** (1.6) A route a plugin adds (PluginApi.registerRoute). */
export interface PluginRoute {
  method: 'GET';
  /** Under `{base}/`, fixed segments only: `fleet/nodes`. */
  path: string;
  /** The least power that may call it (others: 403 forbidden); read per request. */
  minPower(): number;
  handle(call: PluginRouteCall): unknown;
}

/** (1.6) One request of a plugin's route. */
export interface PluginRouteCall {
  /** The query string's parameters, the first value of each. */
  query: Readonly<Record<string, string>>;
  caller: { id: number; username: string; power: number };
  requestId: string;
}

/** (1.5) PluginApi.secrets. */
export interface PluginSecrets {
  /** A scheme of references beside env: and file: (`vault:`, a cloud secret manager); one name, one plugin. */
  registerScheme(scheme: SecretScheme): void;
  /**
   * The current value of a `{ secret }` object of the endpoint's validated configuration (a `file:` changed
   * on disk is read again within a second). Only for where the credential goes: never log or answer it.
   */
  value(reference: SecretReference): string;
  /** `text` with every secret value the gateway handed out replaced by `***`. */
  mask(text: string): string;
  /** JSON-able data with every string masked as `mask` does. */
  maskData(data: unknown): unknown;
  /**
   * A mask for a stream of text chunks (a value cut across two chunks is masked too). (1.5) With `release`, the
   * end it holds back is passed to it, masked, once no chunk has followed for a moment (a pause).
   */
  maskStream(release?: (text: string) => void): SecretStreamMask;
}

/**
 * The request context of the seed's section 2.2 after overwrite_wrapping: user_id, username, power,
 * core_group_id, core_group_name, toolkit_group, request_id, payload, db_context, minus removed
 * fields, plus promoted ones.
 */
export type RequestContext = Record<string, unknown>;

export type { PreparedRead, ErrorCodeDeclaration };

export interface EndpointType<Config> {
  /** The name toolkit files use in `type:`. */
  type: string;
  /** Validates the endpoint's keys that are not core keys (any Standard Schema: zod, valibot, ...). */
  configSchema: StandardSchemaV1<unknown, Config>;
  /**
   * Checks beyond shape, at load: names of tables, functions, context fields. Paths are relative to the
   * endpoint. A check that throws refuses only its toolkit file.
   */
  check?(config: Config, env: CheckEnvironment): ConfigIssue[];
  /**
   * Optional: advice on an endpoint that loaded, which never refuses it: `tkgate config check` prints it
   * as warnings (limits that let through requests the endpoint cannot serve, say). Paths are relative to
   * the endpoint.
   */
  warn?(config: Config, env: WarnEnvironment): ConfigIssue[];
  /**
   * Runs one request. Return JSON-able data for the envelope (`undefined` is `null`), `reply(data, {
   * status, headers })`, a StreamedResponse, or throw a GatewayError.
   */
  execute(call: EndpointCall<Config>): Promise<unknown>;
  /**
   * Optional: a version of one of this type's endpoints is gone for good: a reload replaced or removed it
   * and its last in-flight request has finished. Release what was kept for `endpoint.key`. Once per version.
   */
  onRetire?(endpoint: EndpointIdentity): void | Promise<void>;
  /**
   * (1.6) Optional: a version of one of this type's endpoints became live (the gateway's start, or a reload that
   * added or changed it), before its first request: start what it keeps running (plugin-http's health probes).
   * Once per version, with its checked config; onRetire (or onClose) ends it. A throw is logged and changes nothing.
   */
  onLoad?(endpoint: EndpointIdentity, config: Config): void;
  /**
   * (1.5) Optional: the methods an endpoint of this type may list in `method`, by its config; default GET and POST.
   * A type that forwards the request itself (plugin-http's `forward: request`) takes more.
   */
  methods?(config: Config): readonly string[];
  /** Optional: what this endpoint's answers look like, for the OpenAPI description. */
  describeResponse?(config: Config): ResponseDescription;
  /**
   * (1.5) Optional: the payload fields the endpoint reads, for the OpenAPI description: `needed` ones (absent:
   * 400) and `optional` ones. Without it, every `$payload.<field>` string in the type's keys counts as needed.
   */
  describePayload?(config: Config): PayloadFields;
  /**
   * (1.4) Optional: whether this type's endpoints are recorded in the audit trail when neither the endpoint nor
   * its toolkit says (`audit:`); default false. `exec` says true: a command run is worth a record.
   */
  audited?: boolean;
  /**
   * (1.5) Optional: whether one of this type's endpoints runs as a job (a run, docs/runs.md) rather than within
   * its request, and its queue's limits; undefined: within the request (`execute`). Core records the run, answers
   * 202, queues it across all instances and calls `runDetached` on the instance that claims it.
   */
  detached?(config: Config): DetachedPlan | undefined;
  /** (1.5) Runs one run of a detached endpoint: required with `detached`. */
  runDetached?(run: DetachedRun<Config>): Promise<DetachedOutcome>;
  /**
   * (1.5) Optional: runs an endpoint's `approval.dry_run` once, at the call, with the run's context, and resolves
   * to what it printed (secret values masked) for the approvers to read. Without it `dry_run` is a config error.
   */
  dryRun?(run: DryRun<Config>): Promise<DryRunOutcome>;
  /**
   * (1.6) Optional, with `detached`: the nodes (hosts) a run of this endpoint runs on, by name, in the order they
   * run. Called when the run is created: the selection is fixed then, kept with the run, shown to its approvers, and
   * handed to `runDetached` as `run.nodes`. Throw a GatewayError (400) for a selection the call cannot have.
   */
  selectNodes?(call: NodeSelectionCall<Config>): readonly string[] | Promise<readonly string[]>;
}

/** (1.6) What a run's node selection is made from. */
export interface NodeSelectionCall<Config> {
  config: Config;
  context: RequestContext;
  /** A rerun's: only these nodes (those of them the type still knows), whatever the endpoint's selection says. */
  only?: readonly string[];
}

/** (1.6) A node's status in a run with nodes. */
export type RunNodeStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'skipped';

/** (1.6) A node's state as a run reports it (DetachedRun.nodeChanged); times are ISO-8601. */
export interface RunNodeState {
  name: string;
  status: RunNodeStatus;
  exit_code: number | null;
  signal: string | null;
  /** Why the node ended other than by its exit (`unreachable`, `host_key_mismatch`, `cancelled_by`, ...). */
  reason: string | null;
  started_at: string | null;
  ended_at: string | null;
}

/** (1.5) A dry run (`approval.dry_run`) of a run that waits for approval. */
export interface DryRun<Config> {
  config: Config;
  /** `approval.dry_run` as the toolkit file writes it. */
  command: string | readonly string[];
  context: RequestContext;
  runId: string;
  endpoint: EndpointIdentity;
  log: Logger;
  /** The most output (stdout and stderr together, in the order they came) the outcome may hold. */
  maxOutputBytes: number;
  /** Aborted when the gateway stops: end the dry run at once. */
  signal: AbortSignal;
}

/** (1.5) How a dry run ended and what it printed (masked, at most `maxOutputBytes`). */
export interface DryRunOutcome {
  status: 'succeeded' | 'failed' | 'timed_out';
  exitCode?: number;
  output: string;
}

/** (1.5) How an endpoint's runs queue: the limits hold across every instance on the database. */
export interface DetachedPlan {
  /** Runs of this endpoint running at once. */
  maxConcurrency: number;
  /** Runs waiting; one more is 503 busy. */
  maxQueued: number;
  /** Output kept per run (stdout and stderr together); past it the run goes on and says truncated. */
  maxOutputBytes: number;
  /** `$payload.<field>`, `$context.<field>` or (1.5) `$path.<name>`: runs with one value of it run one at a time, oldest first. */
  concurrencyKey?: string;
  /** Power that sees any run of the endpoint besides its caller (default auth.admin_power). */
  viewPower?: number;
  /** Power that cancels any run of the endpoint (default auth.admin_power). */
  cancelPower?: number;
  /**
   * (1.5) How many more runs this instance may start now: the type's own bound on what runs here at once (exec:
   * the places of `max_processes` its calls have left). Core claims no more here, so another instance takes them.
   * Default: no bound of the type's own.
   */
  room?: () => number;
}

/** (1.5) One run, on the instance that claimed it. Nothing of it depends on the request that asked for it. */
export interface DetachedRun<Config> {
  config: Config;
  context: RequestContext;
  runId: string;
  /** The id of the request that asked for the run. */
  requestId: string;
  endpoint: EndpointIdentity;
  /** Lines carry `plugin`, `run_id`, `toolkit` and `endpoint`. */
  log: Logger;
  /** Where the run's output goes: core chunks it, stores it and streams it to followers. */
  output: OutputSink;
  /**
   * Aborted when the run must stop (cancelled, or the gateway stopping): stop gently at once (a command gets
   * SIGTERM), and for good `graceMs()` later (SIGKILL). Resolve once nothing of the run is left.
   */
  signal: AbortSignal;
  /** How long a stopped run may take to end before it is ended by force, read when `signal` aborts. */
  graceMs(): number;
  /** (1.6) The run's nodes (EndpointType.selectNodes), in order; undefined for a run without nodes. */
  nodes?: readonly string[];
  /**
   * (1.6) Records a node's change (running, its end) and tells the run's followers (an SSE `node` event), in order;
   * present with `nodes`. A node's output written before its end is stored before the end's event.
   */
  nodeChanged?(state: RunNodeState): void;
}

/** (1.5) The output of a run, stream by stream; bytes are copied before `write` returns. */
export interface OutputSink {
  write(stream: 'stdout' | 'stderr', bytes: Uint8Array): void;
  /**
   * (1.6) Output of one node of a run with nodes (present then): its own chunks, kept up to the plan's
   * `maxOutputBytes` per node, tagged with the node in the stream and the text form.
   */
  writeNode?(node: string, stream: 'stdout' | 'stderr', bytes: Uint8Array): void;
}

/**
 * (1.5) How a run ended by itself: core says `cancelled` or `failed` (gateway_stopped) itself when it stopped it.
 * `result` is what a call of the endpoint would have answered as `data`, for a run that succeeded.
 */
export interface DetachedOutcome {
  status: 'succeeded' | 'failed' | 'timed_out';
  /** (1.6) A run with nodes that failed because some of its nodes did: `nodes_failed`. */
  reason?: 'nodes_failed';
  exitCode?: number;
  signal?: string;
  result?: unknown;
}

/** The payload fields an endpoint reads (EndpointType.describePayload). */
export interface PayloadFields {
  needed: readonly string[];
  optional: readonly string[];
}

/** What plugins may add to the gateway's metrics (PluginApi.metrics); ops/metrics.ts implements it. */
export interface PluginMetrics {
  /** A gauge read at every scrape, e.g. `tkgate_exec_running` (summed over cluster workers). */
  gauge(name: string, help: string, read: () => number): void;
  /**
   * (1.5) A counter with labels. Returns, for one set of label values, the function that counts one: bind it
   * once (per target, per outcome) and call it per request, with no label lookup on the request path.
   */
  counter(name: string, help: string, labelNames: readonly string[]): (labelValues: readonly string[]) => () => void;
  /**
   * (1.5) A gauge with labels, read at every scrape: `read` gives each series' label values and value.
   * `aggregator` says how cluster workers' values combine (default sum).
   */
  labelledGauge(
    name: string,
    help: string,
    labelNames: readonly string[],
    read: () => Iterable<readonly [readonly string[], number]>,
    aggregator?: 'sum' | 'min' | 'max',
  ): void;
}

export interface ConfigIssue {
  path: Array<string | number>;
  message: string;
}

export interface WarnEnvironment {
  /** The largest request body the endpoint accepts (client_filter.max_body_bytes, else server.max_body_bytes); 0 when it serves GET only. */
  maxBodyBytes: number;
}

export interface CheckEnvironment {
  /** Tables and columns of the live database, plugins' own tables included. */
  schema: DatabaseSchema;
  /** Names of the registered in-process functions. */
  functions: ReadonlySet<string>;
  /** Top-level fields the request context will have, after overwrite_wrapping. */
  contextFields: ReadonlySet<string>;
  /** Keys db_context will have, after overwrite_wrapping moved some out. */
  dbContextKeys: ReadonlySet<string>;
  /** The payload fields that can reach the endpoint (client_filter.allowed_fields), or undefined for any. */
  payloadFields: ReadonlySet<string> | undefined;
  /** (1.5) The endpoint path's parameters (`{name}` segments, `*` for a wildcard's rest): what `$path.<name>` may name. */
  pathParams: ReadonlySet<string>;
  /** (1.4) The toolkit file's absolute path: files an endpoint names (certificates) are relative to its directory. */
  toolkitFile: string;
}

export interface EndpointCall<Config> {
  config: Config;
  context: RequestContext;
  requestId: string;
  /**
   * (1.5) The id of the authenticated user the call is made for, whatever overwrite_wrapping left of the
   * context: for state that must never be shared between users, such as upstream connections (an answer
   * misread on a shared connection would reach another user).
   */
  callerId: number;
  /** The request's method: GET or POST (the endpoint's `method` says which it accepts). */
  method: string;
  /** The caller's address: the socket's, or with server.trust_proxy the last X-Forwarded-For entry. */
  clientAddress: string;
  /** Request headers minus Authorization, Cookie, hop-by-hop headers and the caller's trace headers (use `trace`). */
  headers: Record<string, string>;
  /** Aborted when the client goes away. Made on first read: an AbortSignal per request is not free. */
  signal: AbortSignal;
  /**
   * API 1.2: `listener` runs once if the client closes the connection before its answer is complete (at
   * once when it already has). Returns the function that stops listening. The cheap form of `signal`.
   */
  onClientGone(listener: () => void): () => void;
  db: Database;
  /** Lines carry `plugin`, `request_id`, `toolkit` and `endpoint`. */
  log: Logger;
  /** Identifies the endpoint (toolkit, path) for logs and per-endpoint state. */
  endpoint: EndpointIdentity;
  /**
   * (1.4) Adds facts about this run to the call's audit event (`details`), when the endpoint is audited; else
   * nothing. JSON-able values, merged key by key; call it before returning or throwing (an exit code, say). Never
   * request data, a secret or a header value: the audit trail keeps only what is meant to be kept.
   */
  addAuditDetails(details: Record<string, unknown>): void;
  /** (1.5) The client's request as received, for a type that forwards it (made on first read). */
  incoming: IncomingRequest;
  /**
   * (1.5) A WebSocket upgrade's connection (a GET with `Upgrade: websocket`), else undefined. Steps 1-8 have
   * passed; a type that completes the handshake on `socket` returns UPGRADED. Answering anything else (or
   * throwing) refuses the upgrade with that ordinary HTTP answer.
   */
  upgrade: UpgradeCall | undefined;
  /**
   * API 1.4: the request's W3C trace. Start a child span for each call the endpoint makes and give the
   * callee its `traceparent` and `tracestate` (docs/plugins.md, "Traces").
   */
  trace: TraceContext;
}

/** (1.5) A WebSocket upgrade handed to the endpoint type (call.upgrade). */
export interface UpgradeCall {
  request: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  /**
   * How to end the socket when the session or key it was opened with ends (logout anywhere, revocation, expiry):
   * close it with 4401 `session_ended`. Without it, the socket is destroyed.
   */
  onCredentialEnd(close: () => void): void;
  /**
   * (1.6) The browser's token subprotocol (`tkgate.bearer.<token>`) when the client offered no other: a browser fails
   * a 101 that names none of its offers, so the handshake's answer names this one when the upstream chose none.
   * Never sent to an upstream. Undefined when the client offered another subprotocol, or none.
   */
  tokenProtocol: string | undefined;
}

/** (1.5) What a type that forwards the client's request needs of it beyond the request context. */
export interface IncomingRequest {
  /** A wildcard endpoint's rest of the path as received (percent-encoded; checked to hold no `.` or `..` segment), else ''. */
  pathRest: string;
  /** (1.6) Whether the client's path ended with a slash (`files/reports/`): a directory's URL, kept when forwarded. */
  trailingSlash: boolean;
  /**
   * (1.6) This endpoint's path at the gateway as the client called it, without the wildcard's rest or a trailing slash
   * (`/api/tk/app/inventory/files`): where an upstream's `Location` into its own path is rewritten to.
   */
  gatewayPath: string;
  /** The query string as received, byte for byte, without the `?` ('' when none). */
  query: string;
  /** The body after client_filter: JSON re-serialised from the filtered payload, a form as received; undefined when none was sent. */
  body: { contentType: string; bytes: Buffer } | undefined;
  /**
   * The client's headers minus the credentials (Authorization, Cookie, Proxy-Authorization), hop-by-hop ones (also those
   * Connection names), Host, Content-Length, trace headers, X-Forwarded-* and Tkgate-*; repeated ones joined.
   */
  headers: Record<string, string>;
  /**
   * X-Forwarded-For (the chain a trusted proxy sent, then the peer), -Proto and -Host as the upstream should hear them;
   * (1.6) `client`, the caller's address (server.trust_proxy applied), for X-Real-IP. The client's own Forwarded and
   * X-Real-IP are among the headers not passed on: the type sets the gateway's.
   */
  forwarded: { for: string; proto: string; host: string; client: string };
}

export interface EndpointIdentity {
  toolkit: string;
  path: string;
  /**
   * The same object for as long as this version of the endpoint is live: a reload that leaves the
   * endpoint's definition unchanged keeps it, a changed definition gets a new one (see onRetire).
   */
  key: object;
}

export interface FunctionCall {
  context: RequestContext;
  requestId: string;
  signal: AbortSignal;
  db: Database;
  /** Lines carry `plugin` (the function's), `request_id`, `toolkit` and `endpoint`. */
  log: Logger;
  /** API 1.4: the request's W3C trace, as in EndpointCall. */
  trace: TraceContext;
}

export type NamedFunction = (call: FunctionCall) => Promise<unknown> | unknown;

/** Marks of the API's result objects, shared by every copy of @tkgate/core in a process. */
const STREAMED = Symbol.for('tkgate.StreamedResponse');
const REPLY = Symbol.for('tkgate.Reply');

const hasMark = (value: unknown, mark: symbol): boolean => typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[mark] === true;

/**
 * Writes a response body straight to the client: every `write` must wait for its callback before the
 * chunk's memory is reused. Resolve when the body is complete; reject to cut the connection.
 */
export type BodyWriter = (out: Writable) => Promise<void>;

/**
 * Whether an endpoint of this type, with these keys, runs as a job (a run, docs/runs.md): the type says `detached`
 * for it and can run it. Core asks this wherever a key is only for jobs (`approval`, `schedule`).
 */
export function runsAsJob<Config>(type: Pick<EndpointType<Config>, 'detached' | 'runDetached'>, config: Config): boolean {
  return type.runDetached !== undefined && type.detached?.(config) !== undefined;
}

/** A response that is not wrapped in the envelope: bytes streamed to the client as they come. */
export class StreamedResponse {
  constructor(
    /** A stream Koa pipes to the client, or a writer for zero-copy bodies. */
    readonly body: Readable | BodyWriter,
    /** (1.5: a list for a header sent several times, Set-Cookie.) */
    readonly headers: Record<string, string | string[]> = {},
    readonly status = 200,
  ) {}

  /** Recognises a StreamedResponse of any copy of core. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return hasMark(value, STREAMED);
  }
}
Object.defineProperty(StreamedResponse.prototype, STREAMED, { value: true });

export interface ReplyOptions {
  /** 200-299, except 204 and 205 (they have no body, and the envelope is one). Default 200. */
  status?: number;
  /** Added to the response; Content-Type, Content-Length and X-Request-Id are the gateway's. */
  headers?: Record<string, string>;
}

/** An enveloped success with its own status and headers (API 1.1). */
export interface EnvelopedReply {
  readonly data: unknown;
  readonly status: number;
  readonly headers: Record<string, string>;
}

/** `return reply(data, { status: 201, headers: { Location: '…' } })` from execute or a named function. */
export function reply(data: unknown, options: ReplyOptions = {}): EnvelopedReply {
  const answer = { data, status: options.status ?? 200, headers: options.headers ?? {} };
  Object.defineProperty(answer, REPLY, { value: true });
  return answer;
}

export const isReply = (value: unknown): value is EnvelopedReply => hasMark(value, REPLY);

/** (1.5) What execute returns once it completed a WebSocket handshake on `call.upgrade.socket`: the connection is its own now. */
export const UPGRADED: unique symbol = Symbol.for('tkgate.Upgraded');
