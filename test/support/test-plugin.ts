import { GatewayError, z, type TkgatePlugin } from '@tkgate/core';

/** Named functions for tests, loaded by path like any third-party plugin. */
const plugin: TkgatePlugin = {
  name: 'tkgate-test-functions',
  apiVersion: '^1.1',
  register(api) {
    // (1.5) A scheme of its own, as a vault plugin would add one: `{ secret: "fixture:NAME" }` is "fixture-NAME-value";
    // "fixture:missing" is refused as a vault refuses an unknown path; "fixture:unreachable" is read at the load, then
    // fails every read (a vault gone down after it).
    if (api.secrets)
      api.secrets.registerScheme({
        name: 'fixture',
        open(name) {
          if (name === 'missing') throw new Error('no such fixture secret');
          if (name === 'unreachable') {
            let reads = 0;
            return {
              read: () => {
                if (reads++ > 0) throw new Error('the fixture vault cannot be reached');
                return 'fixture-unreachable-value';
              },
            };
          }
          return { read: () => `fixture-${name}-value` };
        },
      });
    api.registerFunction('echo', ({ context }) => context);
    api.registerFunction('sleep', async ({ context }) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      return { slept: true, payload: context.payload };
    });
    // Reads the client-gone signal only after a while, as a slow plugin might: it must already be aborted.
    api.registerFunction('late-signal', async (call) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      const { aborted } = call.signal;
      call.log.info('signal read late', { request_id: call.requestId, aborted });
      return { aborted };
    });
    api.registerFunction('boom', () => {
      throw new Error('secret internals: /etc/shadow');
    });
    // Quotes the planted secret of test/secrets (an environment variable of the gateway) in its error, as a careless plugin would.
    api.registerFunction('leaky', () => {
      const value = process.env.PLANTED_API_KEY ?? 'none';
      throw new GatewayError(418, 'teapot', `the key was ${value}`, { details: { key: value } });
    });
    api.registerFunction('teapot', () => {
      throw new GatewayError(418, 'teapot', 'I am a teapot', { details: { brew: 'tea' } });
    });
    // `type: probe` answers its `version` after `sleep_ms`, and logs when a version of it retires (onRetire).
    const versions = new WeakMap<object, string>();
    api.registerEndpointType({
      type: 'probe',
      configSchema: z.strictObject({ version: z.string(), sleep_ms: z.number().int().min(0).default(0) }),
      async execute({ config, endpoint }) {
        versions.set(endpoint.key, config.version);
        await new Promise((resolve) => setTimeout(resolve, config.sleep_ms));
        return { version: config.version };
      },
      onRetire(endpoint) {
        api.log.info('probe retired', { toolkit: endpoint.toolkit, endpoint: endpoint.path, version: versions.get(endpoint.key) ?? null });
      },
    });
  },
};

export default plugin;
