import type { ResponseDescription } from '@tkgate/core';
import type { HttpConfig } from './http-config.js';

const UPSTREAM_ERROR = {
  status: 502,
  code: 'upstream_error',
  description: 'the upstream failed, timed out, answered non-2xx or (JSON mode) not JSON; details.reason and details.upstream_status say which.',
};

/** For the OpenAPI description: JSON mode answers in the envelope; passthrough answers with the upstream's own bytes. */
export function describeHttpResponse(config: HttpConfig): ResponseDescription {
  if (!config.upstream.passthrough) return { data: { description: "The upstream's JSON answer." }, errors: [UPSTREAM_ERROR] };
  return {
    raw: {
      description: "The upstream's bytes as it sends them, with its status, Content-Type, Content-Length and Content-Disposition; no envelope.",
      content: { '*/*': { schema: { description: "Binary: the upstream's bytes; the media type is its Content-Type." } } },
    },
    errors: [UPSTREAM_ERROR],
  };
}
