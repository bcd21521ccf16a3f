import { reply, z, type EndpointType, type TkgatePlugin } from '@tkgate/core';

/** The keys this type adds to an endpoint of a toolkit file. Strict: a typo is a config error with its key path. */
const configSchema = z.strictObject({
  greeting: z.string().min(1).max(100).default('Hello'),
});
type GreetingConfig = z.infer<typeof configSchema>;

const greeting: EndpointType<GreetingConfig> = {
  type: 'greeting',
  configSchema,
  async execute(call) {
    call.log.info('greeting', { method: call.method });
    return reply({ message: `${call.config.greeting}, ${String(call.context.username)}!` }, { headers: { 'Cache-Control': 'no-store' } });
  },
};

const plugin: TkgatePlugin = {
  name: 'tkgate-plugin-template',
  // The plugin API range this code was written for, as a literal: a tkgate outside it refuses to load it.
  apiVersion: '^1.1',
  register(api) {
    api.registerEndpointType(greeting);
  },
};

export default plugin;
