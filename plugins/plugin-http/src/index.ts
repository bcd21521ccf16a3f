import { EndpointGates, z, type ConfigIssue, type EndpointCall, type EndpointType, type SecretReference, type TkgatePlugin } from '@tkgate/core';
import { describeHttpResponse } from './describe-response.js';
import { FORWARD_METHODS, RequestForwarder } from './forward-request.js';
import { urlParams } from './url-template.js';
import { WebSocketRelay } from './websocket-relay.js';
import { httpConfigSchema, targetsOf, type HttpConfig } from './http-config.js';
import { TargetSets } from './targets.js';
import { proxy, type Upstreams } from './proxy.js';
import { readerTransport } from './reader-transport.js';
import { undiciTransport } from './undici-transport.js';
import { loadUpstreamTls } from './upstream-tls.js';
import { literalCredentials } from './literal-credentials.js';

/**
 * plugin_options."@tkgate/plugin-http". docs/performance.md has the figures behind the defaults.
 * - transport: JSON calls through undici or ("reader") the gateway's own reader, http:// and https://. got, once a
 *   third choice, is refused by name: it is the client of notification deliveries and inventory URL sources, where
 *   its retries and hooks fit (docs/architecture.md), not a proxy transport.
 * - http_passthrough: downloads (http:// and https://) through the own reader ("reader", default: fewer copies
 *   and a flat memory bound) or through `transport`.
 */
const optionsSchema = z.strictObject({
  transport: z
    .enum(['undici', 'reader'], {
      error: (issue) =>
        issue.input === 'got' ? 'got is no longer a transport of the http type: choose undici (the default) or reader (docs/configuration.md)' : undefined,
    })
    .default('undici'),
  http_passthrough: z.enum(['reader', 'transport']).default('reader'),
});
const transports = { undici: undiciTransport, reader: readerTransport };

export type { UpstreamTransport, UpstreamRequest, UpstreamResponse } from './upstream-transport.js';

/** The error codes this type answers with besides core's (docs/errors.md is generated from them). */
export const ERROR_CODES = {
  upstream_error: { status: 502, meaning: 'The upstream failed, timed out, or answered non-2xx or (without passthrough) non-JSON; `details` has its status.' },
  upgrade_required: { status: 426, meaning: 'A WebSocket endpoint (`websocket: true`) was called without `Upgrade: websocket`.' },
  upstream_timeout: { status: 504, meaning: 'A forwarded request (`upstream.forward: request`) got no answer within `upstream.timeout`.' },
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
    const secretValue = (reference: SecretReference) => api.secrets.value(reference);
    const targets = new TargetSets({ log: api.log, metrics: api.metrics });
    const upstreams: Upstreams = { json: transport, passthrough, secretValue, targets };
    const forwarder = new RequestForwarder(secretValue, targets);
    const sockets = new WebSocketRelay(secretValue, targets);
    api.onClose(() => {
      targets.close();
      forwarder.close();
      sockets.close();
      if (passthrough !== transport) passthrough.close();
      transport.close();
    });
    const gates = new EndpointGates('too many upstream calls are running; try again shortly');
    const send = (call: EndpointCall<HttpConfig>, release: () => void): Promise<unknown> =>
      call.config.upstream.forward === 'request' ? forwarder.forward(call, release) : proxy(upstreams, call, release);
    const httpType: EndpointType<HttpConfig> = {
      type: 'http',
      configSchema: httpConfigSchema,
      // upstream.tls names files relative to the toolkit file: read and checked here, at load.
      check: (config, env) => {
        const problems = targetProblems(config);
        // The checks below read the URL(s): only once there is one to read.
        if (problems.length > 0) return problems;
        return [
          ...loadUpstreamTls(
            config.upstream,
            targetsOf(config.upstream).map(({ url }) => url),
            env.toolkitFile,
          ),
          ...forwardProblems(config, env.pathParams),
        ];
      },
      // A version with targets and health checks probes from its load (a dead target is out before any call), and
      // stops once it is gone.
      onLoad: (endpoint, config) => {
        if (config.upstream.targets && config.upstream.health) targets.of(endpoint, config.upstream);
      },
      onRetire: (endpoint) => targets.retire(endpoint.key),
      warn: (config) => literalCredentials(config.upstream.headers),
      methods: (config) => (config.websocket ? ['GET'] : config.upstream.forward === 'request' ? FORWARD_METHODS : ['GET', 'POST']),
      // Not async: with a free gate place the call is the transport's promise alone (an async wrapper cost
      // every call a promise and its turns); each path below answers with a promise, failures as rejections.
      execute: (call) => {
        // A socket holds no gate place: websocket.max_per_user (core) bounds them.
        if (call.config.websocket) return sockets.relay(call);
        // The gate's place at once when one is free: the client's AbortSignal is made only to wait in its queue.
        const gate = gates.of(call.endpoint.key, call.config);
        const release = gate.tryEnter();
        if (release) return send(call, release);
        return gate.enter(call.signal).then((entered) => send(call, entered));
      },
      describeResponse: describeHttpResponse,
    };
    api.registerEndpointType(httpType);
  },
};

/** `url` or `targets`, exactly one; the keys that only mean something with targets. */
function targetProblems(config: HttpConfig): ConfigIssue[] {
  const { upstream } = config;
  if (upstream.url !== undefined && upstream.targets !== undefined)
    return [{ path: ['upstream', 'targets'], message: 'url and targets are mutually exclusive: give one' }];
  if (upstream.url === undefined && upstream.targets === undefined) return [{ path: ['upstream', 'url'], message: 'is required (or targets)' }];
  if (upstream.targets === undefined && upstream.health !== undefined)
    return [{ path: ['upstream', 'health'], message: 'is for targets: a single url is not balanced' }];
  const seen = new Set<string>();
  const problems: ConfigIssue[] = [];
  targetsOf(upstream).forEach(({ url }, i) => {
    if (seen.has(url)) problems.push({ path: ['upstream', 'targets', i], message: 'is listed twice' });
    seen.add(url);
  });
  return problems;
}

/** Each URL of the upstream (its url, or each target's) with its key path. */
function urlsOf(upstream: HttpConfig['upstream']): Array<[string, Array<string | number>]> {
  if (!upstream.targets) return [[upstream.url!, ['upstream', 'url']]];
  return upstream.targets.map((target, i) =>
    typeof target === 'string' ? [target, ['upstream', 'targets', i]] : [target.url, ['upstream', 'targets', i, 'url']],
  );
}

/** Keys of the context mode that mean nothing to a forwarded request; schemes and `{name}`s of every URL. */
function forwardProblems(config: HttpConfig, pathParams: ReadonlySet<string>): ConfigIssue[] {
  const { upstream } = config;
  const problems: ConfigIssue[] = [];
  if (upstream.forward === 'request' && upstream.passthrough)
    problems.push({ path: ['upstream', 'passthrough'], message: 'forward: request always streams the answer as it is; passthrough is for forward: context' });
  for (const [url, path] of urlsOf(upstream)) {
    const ws = /^wss?:/.test(url);
    if (config.websocket !== ws)
      problems.push({
        path,
        message: config.websocket ? 'a WebSocket endpoint needs a ws:// or wss:// URL' : 'ws:// and wss:// are for websocket: true',
      });
    for (const name of urlParams(url)) {
      if (upstream.forward !== 'request' && !config.websocket)
        problems.push({ path, message: `{${name}} in the URL is for forward: request and websocket: true only` });
      else if (!pathParams.has(name)) problems.push({ path, message: `{${name}} is not a parameter of the endpoint's path` });
    }
  }
  return problems;
}

export default plugin;
