import { dialects, type DialectTarget } from '../support/databases.js';

/**
 * The gateways an http-endpoint suite runs on: every dialect with the default transports (undici for JSON
 * calls, the gateway's own reader for passthrough, http:// and https://), then on SQLite each other transport in
 * both modes: the reader for JSON calls, undici for passthrough too (http_passthrough "transport"). Each transport on its own, in both modes, is test/http/unit/transport-conformance.test.ts.
 */
export interface TransportRun {
  dialect: DialectTarget;
  /** For the suite's title. */
  name: string;
  /** plugin_options."@tkgate/plugin-http". */
  options: { transport: 'undici' | 'reader'; http_passthrough?: 'reader' | 'transport' };
  /** Which transport carries JSON calls and which http:// passthrough downloads. */
  json: 'undici' | 'reader';
  passthrough: 'undici' | 'reader';
}

export const transportRuns: TransportRun[] = [
  ...dialects.map((dialect) => ({ dialect, name: 'undici', options: { transport: 'undici' }, json: 'undici', passthrough: 'reader' }) as const),
  { dialect: dialects[0]!, name: 'reader', options: { transport: 'reader' }, json: 'reader', passthrough: 'reader' },
  {
    dialect: dialects[0]!,
    name: 'undici for http:// passthrough too',
    options: { transport: 'undici', http_passthrough: 'transport' },
    json: 'undici',
    passthrough: 'undici',
  },
];

/** The gateway configuration of a run. */
export const runConfig = (run: TransportRun) => ({ plugin_options: { '@tkgate/plugin-http': run.options } });
