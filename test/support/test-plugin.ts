import { GatewayError, PLUGIN_API_VERSION, type TkgatePlugin } from '@tkgate/core';

/** Named functions for tests, loaded by path like any third-party plugin. */
const plugin: TkgatePlugin = {
  name: 'tkgate-test-functions',
  apiVersion: PLUGIN_API_VERSION,
  register(api) {
    api.registerFunction('echo', ({ context }) => context);
    api.registerFunction('sleep', async ({ context }) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      return { slept: true, payload: context.payload };
    });
    api.registerFunction('boom', () => {
      throw new Error('secret internals: /etc/shadow');
    });
    api.registerFunction('teapot', () => {
      throw new GatewayError(418, 'teapot', 'I am a teapot', { details: { brew: 'tea' } });
    });
  },
};

export default plugin;
