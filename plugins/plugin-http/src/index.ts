import { EndpointGates, z, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { describeHttpResponse } from './describe-response.js';
import { gotTransport } from './got-transport.js';
import { httpConfigSchema, type HttpConfig } from './http-config.js';
import { proxy, type Upstreams } from './proxy.js';
import { byScheme, readerTransport } from './reader-transport.js';
import { undiciTransport } from './undici-transport.js';

/** plugin_options."@tkgate/plugin-http". docs/http-transport.md has the figures behind the default. */
const optionsSchema = z.strictObject({ transport: z.enum(['undici', 'got']).default('undici') });
const transports = { undici: undiciTransport, got: gotTransport };

export type { UpstreamTransport, UpstreamRequest, UpstreamResponse } from './upstream-transport.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  upstream_error: { status: 502, meaning: 'The upstream failed, timed out, or answered non-2xx or (without passthrough) non-JSON; `details` has its status.' },
} as const;

const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-http',
  apiVersion: '^1.2',
  async register(api) {
    api.declareErrors(ERROR_CODES);
    const options = await api.readOptions(optionsSchema);
    const transport = transports[options.transport]();
    // JSON calls through the library; passthrough downloads from http:// through the gateway's own reader
    // (fewer copies: docs/performance.md), from https:// through the library.
    const upstreams: Upstreams = { json: transport, passthrough: byScheme(readerTransport(), transport) };
    api.onClose(() => upstreams.passthrough.close());
    const gates = new EndpointGates('too many upstream calls are running; try again shortly');
    const httpType: EndpointType<HttpConfig> = {
      type: 'http',
      configSchema: httpConfigSchema,
      execute: async (call) => {
        // The gate's place at once when one is free: the client's AbortSignal is made only to wait in its queue.
        const gate = gates.of(call.endpoint.key, call.config);
        return proxy(upstreams, call, gate.tryEnter() ?? (await gate.enter(call.signal)));
      },
      describeResponse: describeHttpResponse,
    };
    api.registerEndpointType(httpType);
  },
};

export default plugin;
