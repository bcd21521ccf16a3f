import { dialects, type DialectTarget } from '../support/databases.js';

/**
 * The gateways an http-endpoint suite runs on: every dialect with the default transport (undici for JSON
 * calls; http:// passthrough always goes through the gateway's own reader), then got on SQLite. Each
 * transport on its own, in both modes, is test/http/unit/transport-conformance.test.ts.
 */
export interface TransportRun {
  dialect: DialectTarget;
  /** For the suite's title. */
  name: string;
  /** plugin_options."@tkgate/plugin-http". */
  options: { transport: 'undici' | 'got' };
}

export const transportRuns: TransportRun[] = [
  ...dialects.map((dialect) => ({ dialect, name: 'undici', options: { transport: 'undici' } }) as const),
  { dialect: dialects[0]!, name: 'got', options: { transport: 'got' } },
];

/** The gateway configuration of a run. */
export const runConfig = (run: TransportRun) => ({ plugin_options: { '@tkgate/plugin-http': run.options } });
