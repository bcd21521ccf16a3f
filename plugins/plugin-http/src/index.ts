import { EndpointGates, z, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { describeHttpResponse } from './describe-response.js';
import { gotTransport } from './got-transport.js';
import { httpConfigSchema, type HttpConfig } from './http-config.js';
import { proxy, type Upstreams } from './proxy.js';
import { readerTransport } from './reader-transport.js';
import { undiciTransport } from './undici-transport.js';
import { loadUpstreamTls } from './upstream-tls.js';
import { literalCredentials } from './literal-credentials.js';

/**
 * plugin_options."@tkgate/plugin-http". docs/performance.md has the figures behind the defaults.
 * - transport: JSON calls through undici, got, or ("reader") the gateway's own reader, http:// and https://.
 * - http_passthrough: downloads (http:// and https://) through the own reader ("reader", default: fewer copies
 *   and a flat memory bound) or through `transport`.
 */
const optionsSchema = z.strictObject({
  transport: z.enum(['undici', 'got', 'reader']).default('undici'),
  http_passthrough: z.enum(['reader', 'transport']).default('reader'),
});
const transports = { undici: undiciTransport, got: gotTransport, reader: readerTransport };

export type { UpstreamTransport, UpstreamRequest, UpstreamResponse } from './upstream-transport.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  upstream_error: { status: 502, meaning: 'The upstream failed, timed out, or answered non-2xx or (without passthrough) non-JSON; `details` has its status.' },
} as const;

const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-http',
  apiVersion: '^1.5',
  async register(api) {
    api.declareErrors(ERROR_CODES);
    const options = await api.readOptions(optionsSchema);
    const transport = transports[options.transport]();
    // JSON calls through the transport; passthrough downloads, http:// and https://, through the gateway's own
    // reader (fewer copies and a flat memory bound: docs/performance.md) unless told otherwise.
    const passthrough = options.http_passthrough === 'transport' ? transport : readerTransport();
    const upstreams: Upstreams = { json: transport, passthrough, secretValue: (reference) => api.secrets.value(reference) };
    api.onClose(() => {
      if (passthrough !== transport) passthrough.close();
      transport.close();
    });
    const gates = new EndpointGates('too many upstream calls are running; try again shortly');
    const httpType: EndpointType<HttpConfig> = {
      type: 'http',
      configSchema: httpConfigSchema,
      // upstream.tls names files relative to the toolkit file: read and checked here, at load.
      check: (config, env) => loadUpstreamTls(config.upstream, env.toolkitFile),
      warn: (config) => literalCredentials(config.upstream.headers),
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
