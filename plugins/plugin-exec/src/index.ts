import { AdmissionGate, EndpointGates, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { execConfigSchema, execOptionsSchema, type ExecConfig } from './exec-config.js';
import { checkExecEndpoint, runExecEndpoint, type ExecServices } from './exec-endpoint.js';
import { SpawnPool } from './spawn-pool.js';
import { chooseLauncher } from './spawner.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  exec_failed: {
    status: 500,
    meaning: 'The command exited non-zero, timed out, wrote more than max_output_bytes, or could not be started; stderr is logged, never returned.',
  },
} as const;

const BUSY = 'too many commands are running; try again shortly';

const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-exec',
  apiVersion: '^1.1',
  async register(api) {
    api.declareErrors(ERROR_CODES);
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
    };
    const exec: EndpointType<ExecConfig> = {
      type: 'exec',
      configSchema: execConfigSchema,
      check: checkExecEndpoint,
      execute: (call) => runExecEndpoint(call, services),
      describeResponse: () => ({
        data: { description: 'The command\'s stdout parsed as JSON, or {"output": "<text>"} when it is not JSON.' },
        errors: [
          { status: 500, code: 'exec_failed', description: 'the command failed, timed out or wrote too much; details.reason says which.' },
          { status: 503, code: 'busy', description: 'too many commands run or wait; see Retry-After.' },
        ],
      }),
    };
    api.registerEndpointType(exec);
  },
};

export default plugin;
