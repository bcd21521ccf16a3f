// Scenario 9 of run.js: what tracing costs. The json proxy (an http endpoint calling the upstream) with a
// caller's traceparent, on the gateway as configured (tracing.enabled false: trace context only) and on
// the same configuration with tracing.enabled true, exporting every span (sample_ratio 1) over OTLP/HTTP
// to the bench upstream, which answers any POST with 200 like a collector.
// Instruction counts, steadier on a busy machine, come from scripts/bench/instructions.js (docs/performance.md).
import { login, startTkgate } from './tkgate.js';

export const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/**
 * Rows for the scenario: `row(name, gateway, load)` is run.js's tkgate row; `track` registers the traced
 * gateway so run.js stops it. Returns the rows and a stop function.
 */
export async function tracingRows({ config, gateway, auth, upstreamUrl, row, track }) {
  const traced = track(
    await startTkgate(config, [], {
      TKGATE_TRACING_ENABLED: 'true',
      TKGATE_TRACING_ENDPOINT: `${upstreamUrl}/v1/traces`,
      TKGATE_TRACING_SAMPLE_RATIO: '1',
    }),
  );
  const load = (authorization) => ({
    url: '/tk/app/bench/json',
    method: 'POST',
    body: '{"q":"disk"}',
    headers: { ...authorization, 'content-type': 'application/json', traceparent: TRACEPARENT },
  });
  const tracedAuth = { authorization: `Bearer ${await login(traced.base)}` };
  return {
    // The traced gateway first: the scenario's goal is its ratio to the untraced one.
    rows: [row('tracing on (every span exported)', traced, load(tracedAuth)), row('tracing off', gateway, load(auth))],
    stop: () => traced.stop(),
  };
}
