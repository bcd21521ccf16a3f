import type { PipelineStep } from '../pipeline/pipeline-step.js';
import { asPayloadObject, readPayloadBody } from './payload-body.js';

/** The auth endpoints' body: a JSON object of at most server.max_body_bytes (413 past it); empty is {}. */
export function readJsonObjectBody(limitBytes: number): PipelineStep {
  return async (ctx) => {
    const { body } = await readPayloadBody(ctx, { endpointMax: undefined, serverMax: limitBytes, allowedContentTypes: ['application/json'] });
    ctx.request.body = asPayloadObject(body) as typeof ctx.request.body;
  };
}
