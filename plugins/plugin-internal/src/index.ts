import { databaseSystemName, GatewayError, type DatabaseSchema, type EndpointCall, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { checkInternalEndpoint } from './check-queries.js';
import { describeInternalResponse, payloadFieldsOf } from './describe-response.js';
import { internalConfigSchema, type InternalConfig } from './internal-config.js';
import { prepareQueries, runQueries, type PreparedQuery } from './run-queries.js';

/** Queries are prepared once per endpoint version (configs are immutable, so the config object is the key). */
const prepared = new WeakMap<InternalConfig, PreparedQuery[]>();
/** The live schema each endpoint version was checked against at load: it types the values the queries bind. */
const checkedAgainst = new WeakMap<InternalConfig, DatabaseSchema>();

const plugin: TkgatePlugin = {
  name: '@tkgate/plugin-internal',
  apiVersion: '^1.5',
  register(api) {
    const systemName = databaseSystemName(api.db);
    const internal: EndpointType<InternalConfig> = {
      type: 'internal',
      configSchema: internalConfigSchema,
      check(config, env) {
        checkedAgainst.set(config, env.schema);
        return checkInternalEndpoint(config, env);
      },
      describeResponse: describeInternalResponse,
      describePayload: payloadFieldsOf,
      async execute(call) {
        // The endpoint's execution as a child span of the request: queries name the database system.
        const span = call.trace.startSpan('internal', {
          attributes: call.config.handler !== undefined ? { 'tkgate.function': call.config.handler } : { 'db.system.name': systemName },
        });
        try {
          const result = await run(call);
          span.end();
          return result;
        } catch (err) {
          span.end(err);
          throw err;
        }
      },
    };
    const run = async (call: EndpointCall<InternalConfig>): Promise<unknown> => {
      if (call.config.handler !== undefined) {
        const fn = api.getFunction(call.config.handler)!;
        try {
          // `signal` passed on read, not copied: the gateway makes it only when someone reads it.
          return await fn({
            context: call.context,
            requestId: call.requestId,
            get signal() {
              return call.signal;
            },
            db: call.db,
            log: call.log,
            trace: call.trace,
          });
        } catch (err) {
          if (err instanceof GatewayError) throw err;
          throw new GatewayError(500, 'internal_error', 'internal error', { cause: err });
        }
      }
      let queries = prepared.get(call.config);
      if (!queries) {
        const schema = checkedAgainst.get(call.config);
        if (!schema)
          throw new GatewayError(500, 'internal_error', 'internal error', { cause: new Error('an internal endpoint ran without its load-time check') });
        prepared.set(call.config, (queries = prepareQueries(call.config.pseudo_querys!, schema)));
      }
      return runQueries(call.db, queries, call.context, api.prepareRead);
    };
    api.registerEndpointType(internal);
  },
};

export default plugin;
