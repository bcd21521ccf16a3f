import { AdmissionGate, EndpointGates, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { execConfigSchema, execOptionsSchema, type ExecConfig } from './exec-config.js';
import { checkExecEndpoint, runExecEndpoint, warnExecEndpoint, type ExecServices } from './exec-endpoint.js';
import { makeGatewayNotDumpable } from './not-dumpable.js';
import { SpawnPool } from './spawn-pool.js';
import { dryRunCommand, execPlan, runDetachedCommand, type RunServices } from './detached-run.js';
import { chooseLauncher } from './spawner.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  exec_failed: {
    status: 500,
    meaning: 'The command exited non-zero, timed out, wrote more than max_output_bytes, or could not be started; stderr is logged, never returned.',
  },
  context_too_large: {
    status: 413,
    meaning:
      "The request context (the payload with the caller's fields) is larger than one argument of an exec command may be (Linux: 128 KiB) and the endpoint does not pass it on stdin; `details` gives `context_bytes` and `limit_bytes`.",
  },
} as const;

const BUSY = 'too many commands are running; try again shortly';

const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-exec',
  // 1.4: call.addAuditDetails and `audited` (a command run is recorded in the audit trail by default), call.trace;
  // 1.5: secrets (env values kept outside the toolkit file, and the mask of what commands print); detached and
  // runDetached (run: async); dryRun (approval.dry_run).
  apiVersion: '^1.5',
  async register(api) {
    api.declareErrors(ERROR_CODES);
    makeGatewayNotDumpable(api.log);
    const parsed = await api.readOptions(execOptionsSchema);
    const pool = new SpawnPool(parsed.spawn_helpers, chooseLauncher(parsed.spawner, api.log), api.log);
    api.onClose(() => pool.close());
    const perEndpoint = new EndpointGates(BUSY);
    const globalGate = new AdmissionGate(parsed.max_processes, parsed.max_queue, BUSY);
    api.metrics.gauge('tkgate_exec_running', 'Commands of exec endpoints running now', () => globalGate.running);
    const services: ExecServices = {
      globalGate,
      endpointGate: (key, config) => perEndpoint.of(key, config),
      run: (spec) => pool.run(spec),
      secrets: api.secrets,
    };
    const runServices: RunServices = { secrets: api.secrets, processes: globalGate, groups: pool };
    const exec: EndpointType<ExecConfig> = {
      type: 'exec',
      configSchema: execConfigSchema,
      check: checkExecEndpoint,
      warn: warnExecEndpoint,
      execute: (call) => runExecEndpoint(call, services),
      // Runs count against max_processes as calls do: an instance claims a run only where a place is free.
      detached: (config) => execPlan(config, () => parsed.max_processes - globalGate.running),
      runDetached: (run) => runDetachedCommand(run, runServices),
      dryRun: (run) => dryRunCommand(run, runServices),
      audited: true,
      describeResponse: (config) => ({
        data: { description: 'The command\'s stdout parsed as JSON, or {"output": "<text>"} when it is not JSON.' },
        errors: [
          { status: 500, code: 'exec_failed', description: 'the command failed, timed out or wrote too much; details.reason says which.' },
          ...(config.stdin
            ? []
            : [{ status: 413, code: 'context_too_large', description: 'the request context is larger than one command argument may be (128 KiB).' }]),
          { status: 503, code: 'busy', description: 'too many commands run or wait; see Retry-After.' },
        ],
      }),
    };
    api.registerEndpointType(exec);
  },
};

export default plugin;

export { makeGatewayNotDumpable } from './not-dumpable.js';
