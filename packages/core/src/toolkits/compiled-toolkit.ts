import type { FireTimes } from './schedule-times.js';
import type { RegisteredType } from '../plugins/endpoint-types.js';
import type { RateLimitRule } from '../rate-limits/rate-limit-rule.js';
import type { CompiledClientFilter } from './client-filter.js';
import type { DbContextEntry } from './db-context-entries.js';
import type { PathTemplate } from './path-templates.js';
import type { WrappingRule } from './wrapping-rules.js';
import type { CompiledTrigger } from '../triggers/trigger-config.js';

/** A validated toolkit, immutable once built: a request holds on to the one it started with. */
export interface CompiledToolkit {
  name: string;
  kind: 'app' | 'lib';
  enabled: boolean;
  defaultGroup: string | null;
  description?: string;
  file: string;
  /** Where the file writes `name:` (line and column from 1), for a problem about the name (defined twice). */
  nameAt?: { line: number; column: number };
  /** The toolkit's rate_limit: one budget for all its endpoints that have none of their own. */
  rateLimit?: RateLimitRule;
  /** Endpoints by path (a template's as written), then by method. */
  routes: ReadonlyMap<string, ReadonlyMap<string, CompiledEndpoint>>;
  /** The template paths, tried in order when no exact path takes a request: `{name}` ones, then wildcards (path-templates.ts). */
  templates: readonly TemplateRoute[];
}

/** Endpoints of one template path, by method. */
export interface TemplateRoute {
  template: PathTemplate;
  byMethod: ReadonlyMap<string, CompiledEndpoint>;
}

export interface CompiledEndpoint {
  toolkit: string;
  /** The endpoint as written (JSON): a reload that leaves it unchanged keeps this very object live. */
  definition: string;
  path: string;
  /** A path with `{name}` segments or a trailing `*`; undefined for an exact path. */
  template?: PathTemplate;
  methods: readonly string[];
  description?: string;
  minPower: number;
  /** The endpoint's own rate_limit (it replaces the toolkit's). */
  rateLimit?: RateLimitRule;
  clientFilter: CompiledClientFilter;
  dbContext: readonly DbContextEntry[];
  wrapping: readonly WrappingRule[];
  /** Whether each call is recorded in the audit trail: the endpoint's `audit`, else the toolkit's, else the type's default. */
  audit: boolean;
  /** The payload fields an audited call's event keeps (`audit_fields`). */
  auditFields: readonly string[];
  /** `approval`: each run waits for approvers before it starts (runs/approvals). */
  approval?: CompiledApproval;
  /** `schedule`: runs started by the clock (schedules/, docs/schedules.md); only on endpoints that run as jobs. */
  schedules?: readonly CompiledSchedule[];
  /** `notify`: the endpoint's rules, else its toolkit's (an endpoint that runs as a job only); empty: none. */
  notify: readonly CompiledNotifyRule[];
  /** `trigger`: signed calls without a credential start it (triggers/, pipeline/trigger-step.ts). */
  trigger?: CompiledTrigger;
  type: RegisteredType;
  /** The type's own keys, as its schema returned them. */
  typeConfig: unknown;
  /**
   * Payload fields without which the endpoint answers 400 although client_filter does not require them:
   * the `$payload.<field>` of an inject_db_context filter or of the type's keys (a pseudo query's where).
   * OpenAPI marks them required.
   */
  neededPayloadFields: readonly string[];
  /** Payload fields the endpoint reads when they are there (its type's describePayload): OpenAPI lists them, not required. */
  optionalPayloadFields: readonly string[];
  /** The error codes the type's plugin declared (api.declareErrors), for OpenAPI. */
  pluginErrors: ReadonlyArray<{ status: number; code: string; description: string }>;
}

/** One of an endpoint's `schedule` entries, checked, with its defaults. */
export interface CompiledSchedule {
  /** `<toolkit>/<endpoint path>#<name>`. */
  id: string;
  name: string;
  cron: string;
  timezone: string;
  /** The fire times of `cron` in `timezone`, by the rules of docs/schedules.md. */
  times: FireTimes;
  as: string;
  payload: Readonly<Record<string, unknown>>;
  overlap: 'skip' | 'queue' | 'allow';
  missed: 'latest' | 'skip';
  missedWindowMs: number;
}

/** One `notify` rule (docs/notifications.md). */
export interface CompiledNotifyRule {
  events: readonly string[];
  sink: string;
  /** run.failed only for this failure in a row (null: every failure). */
  afterConsecutiveFailures: number | null;
  onRecovery: boolean;
}

/** An endpoint's `approval`, with its defaults. */
export interface CompiledApproval {
  /** Approvers have at least this power (null: any power, the group decides). */
  minPower: number | null;
  /** Approvers belong to this core group (null: any group, the power decides). */
  group: string | null;
  quorum: number;
  expiresMs: number;
  allowSelf: boolean;
  /** The dry run, as written: the endpoint's type runs it (EndpointType.dryRun). */
  dryRun?: string | readonly string[];
}
