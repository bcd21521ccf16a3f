import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import {
  GatewayError,
  isSecretReference,
  jsonDepthExceeds,
  type AdmissionGate,
  type CheckEnvironment,
  type ChildSpan,
  type ConfigIssue,
  type EndpointCall,
  type PluginSecrets,
  type WarnEnvironment,
} from '@tkgate/core';
import { CONTEXT_VARIABLE, maxOutputOf, timeoutOf, type ExecConfig } from './exec-config.js';
import { MAX_ARGUMENT_BYTES, type ProcessOutcome, type ProcessSpec } from './run-process.js';

/** Load-time checks: the working directory exists, and a command given by path is an executable file. */
export function checkExecEndpoint(config: ExecConfig, env: CheckEnvironment): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (config.cwd !== undefined) {
    try {
      if (!statSync(config.cwd).isDirectory()) issues.push({ path: ['cwd'], message: `${config.cwd} is not a directory` });
    } catch {
      issues.push({ path: ['cwd'], message: `${config.cwd} does not exist` });
    }
  }
  if (Array.isArray(config.command) && config.command[0]!.includes('/')) {
    const program = path.resolve(config.cwd ?? '.', config.command[0]!);
    try {
      accessSync(program, constants.X_OK);
    } catch {
      issues.push({ path: ['command', 0], message: `${program} is not an executable file` });
    }
  }
  issues.push(...checkRunKeys(config, env));
  return issues;
}

/** Keys of `run: async` only, and a concurrency_key that names a field the context will have. */
function checkRunKeys(config: ExecConfig, env: CheckEnvironment): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (config.run !== 'async') {
    for (const key of ['max_queued', 'concurrency_key', 'runs'] as const)
      if (config[key] !== undefined) issues.push({ path: [key], message: 'only for run: async' });
    return issues;
  }
  if (config.concurrency_key !== undefined) {
    const [source, field] = config.concurrency_key.slice(1).split('.') as [string, string];
    const known =
      source === 'payload'
        ? env.payloadFields === undefined || env.payloadFields.has(field)
        : source === 'path'
          ? env.pathParams.has(field)
          : env.contextFields.has(field);
    const why = {
      payload: `${field} is not in client_filter.allowed_fields`,
      path: `${field} is not a parameter of the endpoint's path`,
      context: `the context has no ${field}`,
    };
    if (!known) issues.push({ path: ['concurrency_key'], message: `names no field: ${why[source as keyof typeof why]}` });
  }
  return issues;
}

/** Room left in the context for what is not the payload (the caller's fields, db_context, request_id). */
const CONTEXT_ALLOWANCE_BYTES = 4096;
/** The largest body whose context surely fits in one argument. */
export const MAX_ARGUMENT_BODY_BYTES = MAX_ARGUMENT_BYTES - CONTEXT_ALLOWANCE_BYTES;

/**
 * `tkgate config check`'s advice, for what loads but fails when called: a program that is not on this machine
 * (a bare name not found on the command's PATH, a string command without /bin/sh), and an endpoint that accepts
 * bodies larger than its command's argument can take (413 context_too_large; smaller requests work). A program
 * given by path that is not executable is refused at load (checkExecEndpoint).
 */
export function warnExecEndpoint(config: ExecConfig, env: WarnEnvironment): ConfigIssue[] {
  const issues = missingProgram(config);
  if (config.stdin || !limitedBySize(config) || env.maxBodyBytes <= MAX_ARGUMENT_BODY_BYTES) return issues;
  issues.push({
    path: [],
    message:
      `accepts bodies of up to ${env.maxBodyBytes} bytes, but its context goes to the command as one ${config.context === 'env' ? 'environment variable' : 'argument'} (at most ${MAX_ARGUMENT_BYTES} bytes on Linux): ` +
      `larger requests are answered 413 context_too_large; set client_filter.max_body_bytes to at most ${MAX_ARGUMENT_BODY_BYTES}, or context: stdin`,
  });
  return issues;
}

/** A string command's program (the context is its "$1"). */
const SHELL = '/bin/sh';

/** What a call of a program that is not here answers, and what to do (docs/operating.md, "Commands in the container image"). */
const NOT_HERE = 'calls will fail with 500 exec_failed (spawn_failed); install it (for the container image: a derived image) or give its path';

function missingProgram(config: ExecConfig): ConfigIssue[] {
  if (!Array.isArray(config.command)) {
    if (executable(SHELL)) return [];
    return [
      { path: ['command'], message: `a string command runs under ${SHELL}, which this machine does not have: ${NOT_HERE}, or give the command as a list` },
    ];
  }
  const program = config.command[0]!;
  if (program.includes('/')) return [];
  const searched = commandPath(config);
  if (searched === undefined) return []; // a PATH kept as a secret: known only when the command runs
  const base = config.cwd ?? process.cwd();
  if (searched.split(':').some((dir) => executable(path.resolve(base, dir || '.', program)))) return [];
  return [{ path: ['command', 0], message: `${program} is not found on PATH (${searched}): ${NOT_HERE}` }];
}

const executable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/**
 * The PATH a command gets: env.PATH when the endpoint sets it (undefined when that is a secret), else the
 * gateway's own.
 */
function commandPath(config: ExecConfig): string | undefined {
  const configured = config.env.PATH;
  if (configured !== undefined) return isSecretReference(configured) ? undefined : configured;
  return gatewayPath();
}

/** The gateway's PATH, which commands get unless their env sets one. */
export const gatewayPath = (): string => process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';

/** Linux bounds one argument and one environment string alike (MAX_ARG_STRLEN): the context in either must fit. */
export const limitedBySize = (config: ExecConfig) => config.context === 'argument' || config.context === 'env';

/** The program and its arguments: the context JSON, when it goes in the arguments, is always one of its own. */
export function argv(config: ExecConfig, contextArgument: string | undefined): [string, string[]] {
  const extra = contextArgument === undefined ? [] : [contextArgument];
  if (Array.isArray(config.command)) return [config.command[0]!, [...config.command.slice(1), ...extra]];
  return [SHELL, ['-c', config.command, 'sh', ...extra]];
}

/** Where the context goes for this run: the argument, stdin and TKGATE_CONTEXT, each when the endpoint says so. */
export function contextPlaces(config: ExecConfig, context: string, oversized: boolean): { argument?: string; stdin?: string; variable?: string } {
  switch (config.context) {
    case 'argument':
      return { argument: oversized ? '-' : context, ...(config.stdin && { stdin: context }) };
    case 'stdin':
      return { stdin: context };
    case 'env':
      return { variable: context };
    case 'none':
      return {};
  }
}

/** The configured environment with each secret reference's current value (a changed secret file is used at once). */
export function configuredEnv(config: ExecConfig, secrets: PluginSecrets): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.env)) env[name] = isSecretReference(value) ? secrets.value(value) : value;
  return env;
}

/** TRACEPARENT and TRACESTATE (the conventional names for a process's environment), replacing any the configuration set. */
export function withTrace(env: Record<string, string>, span: ChildSpan): Record<string, string> {
  env.TRACEPARENT = span.traceparent;
  if (span.tracestate === undefined) delete env.TRACESTATE;
  else env.TRACESTATE = span.tracestate;
  return env;
}

/** stdout nested deeper is answered as text (docs/toolkits.md). */
const MAX_JSON_DEPTH = 64;

/**
 * How the command ended is the command's business, not a fault of the gateway: a warn line with the reason
 * and exit code, no stack. A command that could not be started at all is the gateway's problem (error).
 */
const execFailed = (reason: string, cause: unknown, details: Record<string, unknown> = {}) =>
  new GatewayError(500, 'exec_failed', 'the command failed', {
    details: { reason, ...details },
    cause,
    ...(reason !== 'spawn_failed' && { logLevel: 'warn' as const }),
  });

/**
 * Runs an exec endpoint: waits for a place (per endpoint, then across the gateway), runs the command,
 * and turns its stdout into data: JSON when it parses, else {"output": text}. stderr is only logged.
 */
export interface ExecServices {
  endpointGate(key: object, config: ExecConfig): AdmissionGate;
  globalGate: AdmissionGate;
  run(spec: ProcessSpec): Promise<ProcessOutcome>;
  /** Secret values of env, and the mask of what the command prints of them. */
  secrets: PluginSecrets;
}

export async function runExecEndpoint(call: EndpointCall<ExecConfig>, services: ExecServices): Promise<unknown> {
  const { config } = call;
  const context = JSON.stringify(call.context);
  const oversized = Buffer.byteLength(context) > MAX_ARGUMENT_BYTES;
  if (oversized && limitedBySize(config) && !config.stdin) {
    // The client sent more than this command can take: its mistake (413), not the gateway's.
    const bytes = Buffer.byteLength(context);
    throw new GatewayError(413, 'context_too_large', 'the request is too large for this command', {
      details: { context_bytes: bytes, limit_bytes: MAX_ARGUMENT_BYTES },
      cause: new Error(`the context is ${bytes} bytes, over the ${MAX_ARGUMENT_BYTES}-byte argument limit (the endpoint may set context: stdin)`),
    });
  }
  const leaveEndpoint = await services.endpointGate(call.endpoint.key, config).enter(call.signal);
  try {
    const leaveGlobal = await services.globalGate.enter(call.signal);
    try {
      const places = contextPlaces(config, context, oversized);
      const [file, args] = argv(config, places.argument);
      // The command's run as a child span of the request; the command continues the trace through its environment.
      const span = call.trace.startSpan(`exec ${path.basename(file)}`, { attributes: { 'process.executable.name': path.basename(file) } });
      let outcome: ProcessOutcome | undefined;
      try {
        outcome = await services.run({
          file,
          args,
          cwd: config.cwd,
          env: withTrace(
            {
              PATH: gatewayPath(),
              ...configuredEnv(config, services.secrets),
              ...(places.variable !== undefined && { [CONTEXT_VARIABLE]: places.variable }),
            },
            span,
          ),
          stdin: places.stdin,
          timeoutMs: timeoutOf(config),
          maxOutputBytes: maxOutputOf(config),
          signal: call.signal,
        });
      } finally {
        const exitCode = outcome === undefined ? undefined : outcome.ok ? 0 : outcome.exitCode;
        if (exitCode !== undefined) span.setAttribute('process.exit.code', exitCode);
        span.end(outcome?.ok ? undefined : (outcome?.reason ?? 'failed'));
      }
      return toData(outcome, call, services.secrets);
    } finally {
      leaveGlobal();
    }
  } finally {
    leaveEndpoint();
  }
}

/** What the command printed becomes the answer: with every secret value the gateway handed out masked as ***. */
function toData(outcome: ProcessOutcome, call: EndpointCall<ExecConfig>, secrets: PluginSecrets): unknown {
  if (outcome.stderr)
    call.log.warn('command stderr', {
      request_id: call.requestId,
      toolkit: call.endpoint.toolkit,
      endpoint: call.endpoint.path,
      stderr: secrets.mask(outcome.stderr),
    });
  // The audit trail keeps how the command ended (details.exit_code): 0, its code, or none when it never exited itself.
  if (outcome.ok) call.addAuditDetails({ exit_code: 0 });
  else if (outcome.exitCode !== undefined) call.addAuditDetails({ exit_code: outcome.exitCode });
  if (!outcome.ok) {
    const details: Record<string, unknown> = {};
    if (outcome.exitCode !== undefined) details.exit_code = outcome.exitCode;
    throw execFailed(outcome.reason, outcome.cause ?? new Error(`command ${outcome.reason}${outcome.signal ? ` (${outcome.signal})` : ''}`), details);
  }
  return stdoutData(Buffer.from(outcome.stdout.buffer, outcome.stdout.byteOffset, outcome.stdout.byteLength).toString('utf8'), secrets);
}

/** A command's stdout as data: JSON when it parses, else {"output": text}; masked as text (the value as printed), then as data (a value JSON wrote with escapes). */
export function stdoutData(printed: string, secrets: PluginSecrets): unknown {
  const stdout = secrets.mask(printed);
  // JSON nested deeper than the envelope can safely serialise is not taken as data: the client gets it as text.
  if (jsonDepthExceeds(stdout, MAX_JSON_DEPTH)) return { output: stdout };
  try {
    return secrets.maskData(JSON.parse(stdout));
  } catch {
    return { output: stdout };
  }
}
