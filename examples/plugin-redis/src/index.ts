import { Readable } from 'node:stream';
import { invalidPayload, reply, StreamedResponse, type EndpointCall, type EndpointType, type TkgatePlugin } from '@tkgate/core';
import { Redis } from 'ioredis';
import { buildKey, checkKey } from './key-template.js';
import { endpointSchema, optionsSchema, type RedisEndpoint } from './redis-config.js';
import { redisFailure, REDIS_ERRORS } from './redis-errors.js';

/** Runs one operation; every Redis error becomes a typed GatewayError (redis-errors.ts). */
async function execute(redis: Redis, prefix: string, call: EndpointCall<RedisEndpoint>): Promise<unknown> {
  const { config, context } = call;
  const built = buildKey(prefix, config.key, context);
  if ('missing' in built) throw invalidPayload([{ field: built.missing, rule: 'required', message: `${built.missing} names the key and is required` }]);
  const value = storedValue(config, context.payload as Record<string, unknown>);
  try {
    switch (config.operation) {
      case 'get':
        return await redis.get(built.key);
      case 'incr':
        return { value: await redis.incr(built.key) };
      case 'set':
        await (config.ttl ? redis.set(built.key, value, 'PX', config.ttl) : redis.set(built.key, value));
        return reply({ key: built.key }, { status: 201 });
      case 'push':
        return reply({ length: await redis.rpush(built.key, value) }, { status: 201 });
      case 'range':
        return streamList(await redis.lrange(built.key, 0, config.limit - 1), call);
    }
  } catch (err) {
    throw redisFailure(err);
  }
}

/** The payload field set and push store ('' for the others; check() makes sure they name one). */
function storedValue(config: RedisEndpoint, payload: Record<string, unknown>): string {
  if (config.value_field === undefined) return '';
  const value = payload[config.value_field];
  if (typeof value !== 'string') throw invalidPayload([{ field: config.value_field, rule: 'type', message: `${config.value_field} must be a string` }]);
  return value;
}

/** A list as NDJSON, one item per line, written as the client reads (no envelope: a download). */
function streamList(items: string[], call: EndpointCall<RedisEndpoint>): StreamedResponse {
  call.log.debug('streaming list', { items: items.length });
  const lines = Readable.from(
    (function* () {
      for (const item of items) yield JSON.stringify({ item }) + '\n';
    })(),
  );
  return new StreamedResponse(lines, { 'Content-Type': 'application/x-ndjson' });
}

const plugin: TkgatePlugin = {
  name: 'tkgate-plugin-redis',
  apiVersion: '^1.1',
  async register(api) {
    const options = await api.readOptions(optionsSchema);
    api.declareErrors(REDIS_ERRORS);
    // One connection for the gateway; a request fails fast (503) rather than queueing while Redis is down.
    const redis = new Redis(options.url, { commandTimeout: options.command_timeout, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    redis.on('error', (err: Error) => api.log.warn('redis connection', { err }));
    api.onClose(async () => {
      redis.disconnect();
    });
    await redis.connect().catch((err: Error) => api.log.warn('redis not reachable at start; will retry', { err }));
    const type: EndpointType<RedisEndpoint> = {
      type: 'redis',
      configSchema: endpointSchema,
      check(config, env) {
        const issues = checkKey(config.key, env);
        if ((config.operation === 'set' || config.operation === 'push') && config.value_field === undefined) {
          issues.push({ path: ['value_field'], message: `${config.operation} needs value_field: the payload field to store` });
        }
        return issues;
      },
      execute: (call) => execute(redis, options.key_prefix, call),
    };
    api.registerEndpointType(type);
  },
};

export default plugin;
