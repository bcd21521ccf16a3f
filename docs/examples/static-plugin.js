// A complete tkgate plugin: the worked example of docs/plugins.md, loaded by the test suite from this path.
// It adds the endpoint type `static` (answers configured JSON, optionally per toolkit group) and the
// named function `static.now` (for `type: internal` endpoints with `handler: static.now`).
import { z } from '@tkgate/core';

/** The endpoint keys this type adds; unknown keys are refused with their key path. The descriptions show in editors (`tkgate schema`). */
const configSchema = z.strictObject({
  value: z.unknown().describe('The JSON to answer.'),
  by_group: z.record(z.string(), z.unknown()).optional().describe('Other answers by toolkit group.'),
});

/** @type {import('@tkgate/core').TkgatePlugin} */
const plugin = {
  name: 'tkgate-plugin-static',
  apiVersion: '^1.0',
  register(api) {
    api.registerEndpointType({
      type: 'static',
      configSchema,
      // Runs at load: by_group needs toolkit_group in the context, so refuse a wrapping that removes it.
      check(config, env) {
        if (config.by_group && !env.contextFields.has('toolkit_group')) {
          return [{ path: ['by_group'], message: 'by_group needs toolkit_group, which overwrite_wrapping removes' }];
        }
        return [];
      },
      // Runs per request, after all nine steps: the context is final; the return value is `data`.
      async execute({ config, context }) {
        const group = context.toolkit_group;
        return typeof group === 'string' && config.by_group && group in config.by_group ? config.by_group[group] : config.value;
      },
      // Optional: what `data` looks like, for GET {base}/openapi.json.
      describeResponse: () => ({ data: { description: "The configured value, or the one for the caller's toolkit group." } }),
    });
    api.registerFunction('static.now', ({ context }) => ({ now: new Date().toISOString(), for: context.username }));
  },
};

export default plugin;
