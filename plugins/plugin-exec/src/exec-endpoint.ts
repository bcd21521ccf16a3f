import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import {
  GatewayError,
  jsonDepthExceeds,
  type AdmissionGate,
  type CheckEnvironment,
  type ChildSpan,
  type ConfigIssue,
  type EndpointCall,
  type WarnEnvironment,
} from '@tkgate/core';
import { maxOutputOf, timeoutOf, type ExecConfig } from './exec-config.js';
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
    const known = source === 'payload' ? env.payloadFields === undefined || env.payloadFields.has(field) : env.contextFields.has(field);
    if (!known)
      issues.push({
        path: ['concurrency_key'],
        message: source === 'payload' ? `names no field: ${field} is not in client_filter.allowed_fields` : `names no field: the context has no ${field}`,
      });
  }
  return issues;
}

/** Room left in the context for what is not the payload (the caller's fields, db_context, request_id). */
const CONTEXT_ALLOWANCE_BYTES = 4096;
/** The largest body whose context surely fits in one argument. */
export const MAX_ARGUMENT_BODY_BYTES = MAX_ARGUMENT_BYTES - CONTEXT_ALLOWANCE_BYTES;

/**
 * `tkgate config check`'s advice: an endpoint that accepts bodies larger than its command's argument can
 * take answers them 413 context_too_large; a warning, since smaller requests work.
 */
export function warnExecEndpoint(config: ExecConfig, env: WarnEnvironment): ConfigIssue[] {
  if (config.stdin || env.maxBodyBytes <= MAX_ARGUMENT_BODY_BYTES) return [];
  return [
    {
      path: [],
      message:
        `accepts bodies of up to ${env.maxBodyBytes} bytes, but its context goes to the command as one argument (at most ${MAX_ARGUMENT_BYTES} bytes on Linux): ` +
        `larger requests are answered 413 context_too_large; set client_filter.max_body_bytes to at most ${MAX_ARGUMENT_BODY_BYTES}, or stdin: true`,
    },
  ];
}

/** The program and its arguments: the context JSON is always one argument of its own. */
export function argv(config: ExecConfig, contextArgument: string): [string, string[]] {
  if (Array.isArray(config.command)) return [config.command[0]!, [...config.command.slice(1), contextArgument]];
  return ['/bin/sh', ['-c', config.command, 'sh', contextArgument]];
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

const execFailed = (reason: string, cause: unknown, details: Record<string, unknown> = {}) =>
  new GatewayError(500, 'exec_failed', 'the command failed', { details: { reason, ...details }, cause });

/**
 * Runs an exec endpoint: waits for a place (per endpoint, then across the gateway), runs the command,
 * and turns its stdout into data: JSON when it parses, else {"output": text}. stderr is only logged.
 */
export interface ExecServices {
  endpointGate(key: object, config: ExecConfig): AdmissionGate;
  globalGate: AdmissionGate;
  run(spec: ProcessSpec): Promise<ProcessOutcome>;
}

export async function runExecEndpoint(call: EndpointCall<ExecConfig>, services: ExecServices): Promise<unknown> {
  const { config } = call;
  const context = JSON.stringify(call.context);
  const oversized = Buffer.byteLength(context) > MAX_ARGUMENT_BYTES;
  if (oversized && !config.stdin) {
    // The client sent more than this command can take: its mistake (413), not the gateway's.
    const bytes = Buffer.byteLength(context);
    throw new GatewayError(413, 'context_too_large', 'the request is too large for this command', {
      details: { context_bytes: bytes, limit_bytes: MAX_ARGUMENT_BYTES },
      cause: new Error(`the context is ${bytes} bytes, over the ${MAX_ARGUMENT_BYTES}-byte argument limit (the endpoint may set stdin: true)`),
    });
  }
  const leaveEndpoint = await services.endpointGate(call.endpoint.key, config).enter(call.signal);
  try {
    const leaveGlobal = await services.globalGate.enter(call.signal);
    try {
      const [file, args] = argv(config, oversized ? '-' : context);
      // The command's run as a child span of the request; the command continues the trace through its environment.
      const span = call.trace.startSpan(`exec ${path.basename(file)}`, { attributes: { 'process.executable.name': path.basename(file) } });
      let outcome: ProcessOutcome | undefined;
      try {
        outcome = await services.run({
          file,
          args,
          cwd: config.cwd,
          env: withTrace({ PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', ...config.env }, span),
          stdin: config.stdin ? context : undefined,
          timeoutMs: timeoutOf(config),
          maxOutputBytes: maxOutputOf(config),
          signal: call.signal,
        });
      } finally {
        const exitCode = outcome === undefined ? undefined : outcome.ok ? 0 : outcome.exitCode;
        if (exitCode !== undefined) span.setAttribute('process.exit.code', exitCode);
        span.end(outcome?.ok ? undefined : (outcome?.reason ?? 'failed'));
      }
      return toData(outcome, call);
    } finally {
      leaveGlobal();
    }
  } finally {
    leaveEndpoint();
  }
}

function toData(outcome: ProcessOutcome, call: EndpointCall<ExecConfig>): unknown {
  if (outcome.stderr)
    call.log.warn('command stderr', { request_id: call.requestId, toolkit: call.endpoint.toolkit, endpoint: call.endpoint.path, stderr: outcome.stderr });
  // The audit trail keeps how the command ended (details.exit_code): 0, its code, or none when it never exited itself.
  if (outcome.ok) call.addAuditDetails({ exit_code: 0 });
  else if (outcome.exitCode !== undefined) call.addAuditDetails({ exit_code: outcome.exitCode });
  if (!outcome.ok) {
    const details: Record<string, unknown> = {};
    if (outcome.exitCode !== undefined) details.exit_code = outcome.exitCode;
    throw execFailed(outcome.reason, outcome.cause ?? new Error(`command ${outcome.reason}${outcome.signal ? ` (${outcome.signal})` : ''}`), details);
  }
  return stdoutData(Buffer.from(outcome.stdout.buffer, outcome.stdout.byteOffset, outcome.stdout.byteLength).toString('utf8'));
}

/** A command's stdout as data: JSON when it parses, else {"output": text}. */
export function stdoutData(stdout: string): unknown {
  // JSON nested deeper than the envelope can safely serialise is not taken as data: the client gets it as text.
  if (jsonDepthExceeds(stdout, MAX_JSON_DEPTH)) return { output: stdout };
  try {
    return JSON.parse(stdout);
  } catch {
    return { output: stdout };
  }
}
