import path from 'node:path';
import type { Logger } from '../log.js';
import { nearest } from '../suggest.js';
import type { EndpointTypes, RegisteredType } from '../plugins/endpoint-types.js';
import { runsAsJob, type CheckEnvironment, type ConfigIssue } from '../plugins/plugin-api.js';
import type { JsonSchema } from '../plugins/response-description.js';
import { compileRateLimit } from '../rate-limits/rate-limit-rule.js';
import { compileClientFilter, type PatternCompiler } from './client-filter.js';
import { choiceSourceProblem, secretKeyProblem, type ChoiceSourceCandidate } from '../parameters/index.js';
import type { CompiledApproval, CompiledEndpoint, CompiledNotifyRule, CompiledSchedule, CompiledToolkit, TemplateRoute } from './compiled-toolkit.js';
import { cronProblem, FireTimes, zoneProblem } from './schedule-times.js';
import { fromZod, UNKNOWN_KEY, validateStandard, type Issue } from '../config/schema-issues.js';
import type { ToolkitProblem } from './config-issues.js';
import type { DatabaseSchema } from '../db/database-schema.js';
import { compileDbContext, type DbContextEntry } from './db-context-entries.js';
import { diagnose } from './toolkit-diagnostics.js';
import {
  ENDPOINT_CORE_KEYS,
  endpointCoreSchema,
  toolkitFileSchema,
  type ApprovalConfig,
  type EndpointCoreConfig,
  type NotifyConfig,
  type ScheduleConfig,
} from './toolkit-file-schema.js';
import { toolkitFileJsonSchema } from './toolkit-json-schema.js';
import { parseSourceFile, type SourceFile } from '../config/source-file.js';
import { compileWrapping, namesObjectField } from './wrapping-rules.js';
import { compileTrigger } from '../triggers/trigger-config.js';
import { parseTemplate, repeatedParam, templatesOverlap, type PathTemplate } from './path-templates.js';

export interface CompileEnvironment {
  schema: DatabaseSchema;
  types: EndpointTypes;
  /** Where a plugin check's failure is logged. */
  log?: Logger;
  /**
   * The live endpoint of this toolkit with exactly this definition, if any: it is kept rather than the new
   * compile, so its state (an exec concurrency gate, a plugin's per-endpoint state) survives the reload.
   */
  unchanged?(toolkit: string, definition: string): CompiledEndpoint | undefined;
  /**
   * Asked after each endpoint of a file: a promise when the caller wants the event loop to have a turn
   * before the next one (hot reload: one file of many endpoints with field patterns is seconds of compile;
   * docs/performance.md, "3,000 files at once").
   */
  pause?(): Promise<void> | undefined;
  /** Field patterns compiled once per pass (client-filter.ts, patternCache); each compiled anew without. */
  compilePattern?: PatternCompiler;
  /** The names of the server configuration's notification sinks, which `notify` rules name (none: no sinks). */
  sinks?: ReadonlySet<string>;
}

/** A toolkit, or every problem of the file and, when it can be read, the toolkit name the file declares. */
export type CompileResult = { toolkit: CompiledToolkit } | { problems: ToolkitProblem[]; name: string | undefined };

/** Parses and validates one toolkit file's text as a whole. */
export async function compileToolkitText(file: string, text: string, env: CompileEnvironment): Promise<CompileResult> {
  const source = parseSourceFile(text, file);
  if ('syntax' in source) {
    const { message, hint, position, frame } = source.syntax;
    const problem = { file: path.basename(file), path: '', line: position.line, column: position.column, message, ...(hint ? { hint } : {}), frame };
    return { problems: [problem], name: declaredName(undefined, text) };
  }
  const issues: Issue[] = [];
  const toolkit = await compileDocument(source.document, file, env, issues);
  if (issues.length > 0 || !toolkit) return refused(file, issues, declaredName(source.document, text), source, env.types);
  // YAML has its positions already; a JSON file would be read a second time for them, which only problems justify.
  const nameAt = file.endsWith('.json') ? undefined : source.locate(['name']);
  return { toolkit: nameAt ? { ...toolkit, nameAt } : toolkit };
}

/** The problems of a refused file; with its source, each at its line and column, worded with the JSON Schema's help. */
export function refused(file: string, issues: Issue[], name?: string, source?: SourceFile, types?: EndpointTypes): CompileResult {
  return { problems: diagnose(file, issues, source, types && jsonSchemaOf(types)), name };
}

const jsonSchemas = new WeakMap<EndpointTypes, JsonSchema>();
function jsonSchemaOf(types: EndpointTypes): JsonSchema {
  let schema = jsonSchemas.get(types);
  if (!schema) jsonSchemas.set(types, (schema = toolkitFileJsonSchema(types)));
  return schema;
}

/**
 * The name a refused file means to define: from the document when it parsed, else from a top-level
 * `name:` line (YAML) or the first `"name"` key (JSON), so a broken save still holds its toolkit.
 */
function declaredName(document: unknown, text: string): string | undefined {
  const fromDocument = (document as { name?: unknown } | null | undefined)?.name;
  if (typeof fromDocument === 'string') return fromDocument;
  const match = /^name:[ \t]*["']?([a-z0-9][a-z0-9_-]*)["']?[ \t]*(?:#.*)?$/m.exec(text) ?? /"name"\s*:\s*"([a-z0-9][a-z0-9_-]*)"/.exec(text);
  return match?.[1];
}

/** The keys that make a mapping a toolkit file; a file with none of them is not one and its keys are not listed. */
const TOOLKIT_KEYS = ['name', 'type', 'endpoints'];

async function compileDocument(document: unknown, file: string, env: CompileEnvironment, issues: Issue[]): Promise<CompiledToolkit | undefined> {
  if (document !== null && typeof document === 'object' && !Array.isArray(document) && !TOOLKIT_KEYS.some((key) => key in document)) {
    issues.push({ path: [], message: 'is not a toolkit file: it has none of the keys name, type and endpoints' });
    return undefined;
  }
  const parsed = toolkitFileSchema.safeParse(document);
  if (!parsed.success) {
    issues.push(...fromZod(parsed.error));
    return undefined;
  }
  const config = parsed.data;
  const toolkitNotify = compileNotify(config.notify, env, issues, ['notify']);
  const routes = new Map<string, Map<string, CompiledEndpoint>>();
  const compiled: Array<readonly [number, CompiledEndpoint]> = [];
  for (const [index, raw] of config.endpoints.entries()) {
    const endpoint = await compileEndpoint(raw, { name: config.name, audit: config.audit, notify: toolkitNotify }, file, ['endpoints', index], env, issues);
    const pause = env.pause?.();
    if (pause) await pause;
    if (!endpoint) continue;
    compiled.push([index, endpoint]);
    const byMethod = routes.get(endpoint.path) ?? new Map<string, CompiledEndpoint>();
    for (const method of endpoint.methods) {
      if (byMethod.has(method))
        issues.push({
          path: ['endpoints', index, 'path'],
          message: `${method} ${endpoint.path} is already defined by an earlier endpoint`,
          hint: 'change the path or the method of one of them, or remove one',
        });
      byMethod.set(method, endpoint);
    }
    routes.set(endpoint.path, byMethod);
  }
  checkChoiceSources(compiled, issues);
  return {
    templates: templateRoutes(routes, config.endpoints, issues),
    name: config.name,
    kind: config.type,
    enabled: config.enabled,
    defaultGroup: config.default_group ?? null,
    description: config.description,
    rateLimit: compileRateLimit(config.rate_limit, config.name),
    file,
    routes,
  };
}

/**
 * The template paths in the order step 2 tries them: `{name}` ones before wildcards, longer wildcards first. Two
 * of one kind that could take the same path with the same method are a config error: which one answers must never
 * depend on the order of the file.
 */
function templateRoutes(routes: Map<string, Map<string, CompiledEndpoint>>, raw: ReadonlyArray<Record<string, unknown>>, issues: Issue[]): TemplateRoute[] {
  const templates: TemplateRoute[] = [];
  for (const byMethod of routes.values()) {
    const template = byMethod.values().next().value?.template;
    if (!template) continue;
    for (const earlier of templates) {
      const shared = [...byMethod.keys()].filter((method) => earlier.byMethod.has(method));
      if (shared.length === 0 || !templatesOverlap(earlier.template, template)) continue;
      const [endpoint] = byMethod.values();
      const [other] = earlier.byMethod.values();
      issues.push({
        path: ['endpoints', raw.findIndex((entry) => entry.path === endpoint!.path), 'path'],
        message: `${shared.join(', ')} ${endpoint!.path} could take the same paths as ${other!.path}`,
        hint: 'make one of them an exact path, or give them a literal segment that tells them apart',
      });
    }
    templates.push({ template, byMethod });
  }
  return templates.sort((a, b) => Number(a.template.wildcard) - Number(b.template.wildcard) || b.template.segments.length - a.template.segments.length);
}

/** Each `choices_from.endpoint` names an endpoint of this toolkit that can answer choices (parameters/choices-from.ts). */
function checkChoiceSources(compiled: ReadonlyArray<readonly [number, CompiledEndpoint]>, issues: Issue[]): void {
  if (!compiled.some(([, endpoint]) => endpoint.clientFilter.choiceFields)) return;
  const candidates = new Map<string, ChoiceSourceCandidate>();
  for (const [, endpoint] of compiled) {
    const known = candidates.get(endpoint.path);
    candidates.set(endpoint.path, {
      path: endpoint.path,
      methods: [...(known?.methods ?? []), ...endpoint.methods],
      template: endpoint.template !== undefined,
      runsCommands: (known?.runsCommands ?? false) || endpoint.type.audited === true || endpoint.type.detached?.(endpoint.typeConfig) !== undefined,
      hasChoices: (known?.hasChoices ?? false) || endpoint.clientFilter.choiceFields !== undefined,
    });
  }
  for (const [index, endpoint] of compiled) {
    for (const [field, choicesFrom] of endpoint.clientFilter.choiceFields ?? []) {
      const problem = choiceSourceProblem(choicesFrom.endpoint, endpoint.path, candidates);
      if (problem) issues.push({ path: ['endpoints', index, 'client_filter', 'field_rules', field, 'choices_from', 'endpoint'], message: problem });
    }
  }
}

/** The endpoint's path template, checked: each parameter named once, and path_rules only for its parameters. */
function compilePathTemplate(config: EndpointCoreConfig, issues: Issue[], at: Array<string | number>): PathTemplate | undefined {
  const template = parseTemplate(config.path);
  const repeated = template && repeatedParam(template);
  if (repeated) issues.push({ path: [...at, 'path'], message: `names the path parameter ${repeated} twice` });
  for (const param of Object.keys(config.client_filter?.path_rules ?? {})) {
    if (!template?.params.includes(param))
      issues.push({ path: [...at, 'client_filter', 'path_rules', param], message: `the path ${config.path} has no parameter ${param}` });
  }
  return template;
}

async function compileEndpoint(
  raw: Record<string, unknown>,
  { name: toolkit, audit: toolkitAudit, notify: toolkitNotify }: { name: string; audit: boolean | undefined; notify: readonly CompiledNotifyRule[] },
  file: string,
  at: Array<string | number>,
  env: CompileEnvironment,
  issues: Issue[],
): Promise<CompiledEndpoint | undefined> {
  const definition = JSON.stringify(raw);
  const coreKeys: Record<string, unknown> = {};
  const typeKeys: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) (ENDPOINT_CORE_KEYS.has(key) ? coreKeys : typeKeys)[key] = value;

  const core = endpointCoreSchema.safeParse(coreKeys);
  if (!core.success) {
    issues.push(...fromZod(core.error, at));
    // A misspelt core key (metod) lands among the type's keys: report it as unknown there too.
    const known = typeof raw.type === 'string' ? env.types.type(raw.type) : undefined;
    const typeIssues = known ? await validateStandard(known.configSchema, typeKeys, at) : undefined;
    if (typeIssues && 'issues' in typeIssues) issues.push(...typeIssues.issues.filter((issue) => issue.message === UNKNOWN_KEY));
    return undefined;
  }
  const config = core.data;
  const type = env.types.type(config.type);
  if (!type) {
    const guess = nearest(config.type, env.types.typeNames());
    issues.push({
      path: [...at, 'type'],
      message: `unknown endpoint type ${config.type} (loaded: ${env.types.typeNames().join(', ') || 'none'})`,
      ...(guess ? { hint: `did you mean ${guess}?` } : {}),
    });
    return undefined;
  }
  const before = issues.length;
  const template = compilePathTemplate(config, issues, at);
  const pathParams = new Set(template?.params);
  const clientFilter = compileClientFilter(config.client_filter, issues, [...at, 'client_filter'], env.compilePattern);
  const dbContext = compileDbContext(config.inject_db_context, env.schema, clientFilter.allowedFields, pathParams, issues, [...at, 'inject_db_context']);
  const wrapping = compileWrapping(
    config.overwrite_wrapping,
    dbContext.map((entry) => entry.key),
    issues,
    [...at, 'overwrite_wrapping'],
  );
  const typeConfig = await validateStandard(type.configSchema, typeKeys, at);
  if ('issues' in typeConfig) {
    issues.push(...typeConfig.issues);
    return undefined;
  }
  const toolkitFile = path.resolve(file);
  for (const problem of await env.types.secrets.openAll(typeConfig.value, { toolkitFile }))
    issues.push({ path: [...at, ...problem.path], message: problem.message });
  const checkEnv = {
    schema: env.schema,
    functions: env.types.functionNames(),
    contextFields: wrapping.contextFields,
    dbContextKeys: wrapping.dbContextKeys,
    payloadFields: clientFilter.allowedFields,
    pathParams,
    toolkitFile,
  };
  for (const issue of runCheck(type, typeConfig.value, checkEnv, config.path, env)) issues.push({ path: [...at, ...issue.path], message: issue.message });
  const concurrencyKey = type.runDetached ? type.detached?.(typeConfig.value)?.concurrencyKey : undefined;
  if (concurrencyKey !== undefined && namesObjectField(concurrencyKey))
    issues.push({
      path: [...at, 'concurrency_key'],
      message: `${concurrencyKey} is an object in every call: a concurrency key is a string, number or boolean`,
    });
  checkMethods(config, type, typeConfig.value, issues, at);
  const auditFields = compileAuditFields(config.audit_fields, clientFilter.allowedFields, issues, [...at, 'audit_fields']);
  const approval = compileApproval(config.approval, type, typeConfig.value, issues, [...at, 'approval']);
  const schedules = compileSchedules(config.schedule, `${toolkit}/${config.path}`, template !== undefined, type, typeConfig.value, issues, [...at, 'schedule']);
  const secretKey = clientFilter.secretFields && secretKeyProblem(clientFilter.secretFields, type.detached?.(typeConfig.value)?.concurrencyKey);
  if (secretKey) issues.push({ path: [...at, 'concurrency_key'], message: secretKey });
  const runsAsJob = Boolean(type.runDetached && type.detached?.(typeConfig.value));
  if (config.notify && !runsAsJob)
    issues.push({ path: [...at, 'notify'], message: 'only for endpoints that run as jobs (exec with run: async)', hint: 'set run: async, or remove notify' });
  const notify = config.notify ? compileNotify(config.notify, env, issues, [...at, 'notify']) : runsAsJob ? toolkitNotify : [];
  const methods = Array.isArray(config.method) ? [...new Set(config.method)] : [config.method];
  const trigger = compileTrigger(config.trigger, methods, issues, [...at, 'trigger']);
  if (trigger)
    for (const problem of await env.types.secrets.openAll(config.trigger, { toolkitFile }))
      issues.push({ path: [...at, 'trigger', ...problem.path], message: problem.message });
  if (issues.length > before) return undefined;
  const audit = config.audit ?? toolkitAudit ?? type.audited ?? false;
  const kept = env.unchanged?.(toolkit, definition);
  // The toolkit's `audit` and `notify` are not in the endpoint's definition: a change of them alone compiles the endpoint anew.
  if (kept && kept.audit === audit && JSON.stringify(kept.notify) === JSON.stringify(notify)) return kept;
  return {
    toolkit,
    definition,
    path: config.path,
    ...(template ? { template } : {}),
    methods,
    description: config.description,
    minPower: config.permissions?.min_power ?? 0,
    rateLimit: compileRateLimit(config.rate_limit, `${toolkit}/${config.path}`),
    clientFilter,
    dbContext,
    wrapping: wrapping.rules,
    audit,
    auditFields,
    ...(approval ? { approval } : {}),
    ...(schedules ? { schedules } : {}),
    notify,
    ...(trigger ? { trigger } : {}),
    type,
    typeConfig: typeConfig.value,
    ...payloadFieldsOf(type, typeConfig.value, typeKeys, dbContext),
    pluginErrors: [...env.types.declaredErrorCodes()]
      .filter(([, declared]) => declared.plugin === type.plugin)
      .map(([code, declared]) => ({ status: declared.status, code, description: declared.meaning })),
  };
}

/** `notify` rules (the toolkit's or an endpoint's): each names a sink of the server configuration. */
function compileNotify(rules: NotifyConfig | undefined, env: CompileEnvironment, issues: Issue[], at: Array<string | number>): CompiledNotifyRule[] {
  if (!rules) return [];
  const sinks = env.sinks ?? new Set<string>();
  return rules.map((rule, index) => {
    if (!sinks.has(rule.sink)) {
      const guess = nearest(rule.sink, [...sinks]);
      issues.push({
        path: [...at, index, 'sink'],
        message: `no sink ${rule.sink} in notifications.sinks (configured: ${[...sinks].join(', ') || 'none'})`,
        ...(guess ? { hint: `did you mean ${guess}?` } : {}),
      });
    }
    if (rule.on_recovery && !rule.on.includes('run.failed'))
      issues.push({ path: [...at, index, 'on_recovery'], message: 'follows a run.failed this rule sent: list run.failed in on' });
    return {
      events: [...new Set(rule.on)],
      sink: rule.sink,
      afterConsecutiveFailures: rule.after_consecutive_failures ?? null,
      onRecovery: rule.on_recovery,
    };
  });
}

/** One hour: how long a run waits for approval unless `approval.expires` says. */
const DEFAULT_APPROVAL_EXPIRES_MS = 3_600_000;

/** `approval`: only where the type runs the endpoint as a job, and `dry_run` only where the type runs dry runs. */
function compileApproval(
  approval: ApprovalConfig | undefined,
  type: RegisteredType,
  typeConfig: unknown,
  issues: Issue[],
  at: Array<string | number>,
): CompiledApproval | undefined {
  if (!approval) return undefined;
  if (!runsAsJob(type, typeConfig)) {
    issues.push({ path: at, message: 'only for endpoints that run as jobs (exec with run: async)', hint: 'set run: async, or remove approval' });
    return undefined;
  }
  if (approval.dry_run !== undefined && !type.dryRun) issues.push({ path: [...at, 'dry_run'], message: `the ${type.type} type runs no dry run` });
  return {
    minPower: approval.approvers.min_power ?? null,
    group: approval.approvers.group ?? null,
    quorum: approval.quorum,
    expiresMs: approval.expires ?? DEFAULT_APPROVAL_EXPIRES_MS,
    allowSelf: approval.allow_self,
    ...(approval.dry_run !== undefined ? { dryRun: approval.dry_run } : {}),
  };
}

/** How old a missed fire may be and still be made up, unless `missed_window` says (docs/schedules.md). */
const DEFAULT_MISSED_WINDOW_MS = 3_600_000;

/** `schedule`: only where the type runs the endpoint as a job and on an exact path; each name once, each cron and zone valid. */
function compileSchedules(
  entries: readonly ScheduleConfig[] | undefined,
  endpointId: string,
  templated: boolean,
  type: RegisteredType,
  typeConfig: unknown,
  issues: Issue[],
  at: Array<string | number>,
): CompiledSchedule[] | undefined {
  if (!entries) return undefined;
  if (!runsAsJob(type, typeConfig)) {
    issues.push({ path: at, message: 'only for endpoints that run as jobs (exec with run: async)', hint: 'set run: async, or remove schedule' });
    return undefined;
  }
  if (templated) {
    issues.push({ path: at, message: 'a schedule calls one exact path: not on a path with {name} segments or *' });
    return undefined;
  }
  const names = new Set<string>();
  const compiled: CompiledSchedule[] = [];
  entries.forEach((entry, index) => {
    const where = [...at, index];
    if (names.has(entry.name)) issues.push({ path: [...where, 'name'], message: `schedule ${entry.name} is named twice on this endpoint` });
    names.add(entry.name);
    const cron = cronProblem(entry.cron);
    if (cron) issues.push({ path: [...where, 'cron'], message: `bad cron expression: ${cron.message}`, ...(cron.hint && { hint: cron.hint }) });
    const zone = zoneProblem(entry.timezone);
    if (zone) issues.push({ path: [...where, 'timezone'], message: zone.message, ...(zone.hint && { hint: zone.hint }) });
    if (cron || zone) return;
    compiled.push({
      id: `${endpointId}#${entry.name}`,
      name: entry.name,
      cron: entry.cron,
      timezone: entry.timezone,
      times: new FireTimes(entry.cron, entry.timezone),
      as: entry.as,
      payload: entry.payload,
      overlap: entry.overlap,
      missed: entry.missed,
      missedWindowMs: entry.missed_window ?? DEFAULT_MISSED_WINDOW_MS,
    });
  });
  return compiled;
}

/** `audit_fields`: each once, and each a field that can reach the endpoint (client_filter.allowed_fields, when set). */
function compileAuditFields(
  fields: readonly string[] | undefined,
  allowed: ReadonlySet<string> | undefined,
  issues: Issue[],
  at: Array<string | number>,
): string[] {
  if (!fields) return [];
  fields.forEach((field, index) => {
    if (fields.indexOf(field) !== index) issues.push({ path: [...at, index], message: `${field} is listed twice` });
    else if (allowed && !allowed.has(field))
      issues.push({
        path: [...at, index],
        message: `${field} is not in client_filter.allowed_fields, so no call ever has it`,
        hint: 'add it to allowed_fields or remove it here',
      });
  });
  return [...new Set(fields)];
}

/** The payload fields the endpoint reads: its type says which (API 1.5), else every `$payload.<field>` of its keys is needed. */
function payloadFieldsOf(
  type: RegisteredType,
  config: unknown,
  typeKeys: unknown,
  dbContext: readonly DbContextEntry[],
): Pick<CompiledEndpoint, 'neededPayloadFields' | 'optionalPayloadFields'> {
  const declared = type.describePayload?.(config);
  const filters = dbContext.flatMap((entry) => (entry.filter?.source === 'payload' ? [entry.filter.payloadField] : []));
  const needed = new Set([...filters, ...(declared ? declared.needed : payloadReferences(typeKeys))]);
  return { neededPayloadFields: [...needed], optionalPayloadFields: [...new Set(declared?.optional ?? [])].filter((field) => !needed.has(field)) };
}

const PAYLOAD_REFERENCE = /^\$payload\.([A-Za-z_][A-Za-z0-9_]*)$/;

/** The fields named by `$payload.<field>` values anywhere in a type's keys (docs/toolkits.md: an absent one is 400). */
function payloadReferences(value: unknown, depth = 0): string[] {
  if (typeof value === 'string') return PAYLOAD_REFERENCE.exec(value)?.slice(1, 2) ?? [];
  if (value === null || typeof value !== 'object' || depth > 16) return [];
  return Object.values(value).flatMap((inner) => payloadReferences(inner, depth + 1));
}

const PLAIN_METHODS: readonly string[] = ['GET', 'POST'];

/** Each listed method is one the endpoint's type takes with this config (EndpointType.methods; GET and POST by default). */
function checkMethods(config: EndpointCoreConfig, type: RegisteredType, typeConfig: unknown, issues: Issue[], at: Array<string | number>): void {
  const takes = type.methods?.(typeConfig) ?? PLAIN_METHODS;
  const listed = [config.method].flat();
  for (const method of listed) {
    if (!takes.includes(method))
      issues.push({
        path: [...at, 'method', ...(Array.isArray(config.method) ? [listed.indexOf(method)] : [])],
        message: `${method} is not a method this ${type.type} endpoint takes (${takes.join(', ')})`,
      });
  }
}

/** A plugin's check that throws (a bug of the plugin) refuses this endpoint's file only; the cause is logged. */
function runCheck(type: RegisteredType, config: unknown, checkEnv: CheckEnvironment, endpointPath: string, env: CompileEnvironment): ConfigIssue[] {
  try {
    const issues = type.check?.(config, checkEnv) ?? [];
    if (!Array.isArray(issues)) throw new Error('check() must return an array of issues');
    return issues;
  } catch (err) {
    env.log?.error('plugin check threw', { plugin: type.plugin, type: type.type, endpoint: endpointPath, err });
    return [
      {
        path: [],
        message: `endpoint ${endpointPath}: the check of plugin ${type.plugin} (type ${type.type}) failed unexpectedly; the endpoint is refused (cause in the log)`,
      },
    ];
  }
}
