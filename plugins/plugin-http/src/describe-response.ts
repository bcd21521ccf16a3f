import type { ResponseDescription } from '@tkgate/core';
import type { HttpConfig } from './http-config.js';

const UPSTREAM_ERROR = {
  status: 502,
  code: 'upstream_error',
  description: 'the upstream failed, timed out, answered non-2xx or (JSON mode) not JSON; details.reason and details.upstream_status say which.',
};

/** For the OpenAPI description: JSON mode answers in the envelope; passthrough answers with the upstream's own bytes. */
const UPSTREAM_TIMEOUT = { status: 504, code: 'upstream_timeout', description: 'the upstream did not answer within upstream.timeout.' };

export function describeHttpResponse(config: HttpConfig): ResponseDescription {
  if (config.websocket) {
    return {
      websocket: {
        description:
          'Switching Protocols: the WebSocket to the upstream is open (send the token as Authorization, or from a browser as the subprotocol tkgate.bearer.<token>); frames go both ways as they are.',
      },
      errors: [
        { ...UPSTREAM_ERROR, description: 'the upstream refused the WebSocket or could not be reached.' },
        { ...UPSTREAM_TIMEOUT, description: 'the upstream did not complete its handshake within upstream.timeout.' },
      ],
    };
  }
  if (config.upstream.forward === 'request') {
    return {
      raw: {
        description: "The upstream's answer as it is: its status (a 404 or 409 of the upstream included), headers and body; no envelope.",
        content: { '*/*': { schema: { description: "The upstream's body; the media type is its Content-Type." } } },
      },
      errors: [
        { ...UPSTREAM_ERROR, description: 'the upstream could not be reached or answered malformed HTTP; details.reason says which.' },
        UPSTREAM_TIMEOUT,
      ],
    };
  }
  if (!config.upstream.passthrough) return { data: { description: "The upstream's JSON answer." }, errors: [UPSTREAM_ERROR] };
  return {
    raw: {
      description: "The upstream's bytes as it sends them, with its status, Content-Type, Content-Length and Content-Disposition; no envelope.",
      content: { '*/*': { schema: { description: "Binary: the upstream's bytes; the media type is its Content-Type." } } },
    },
    errors: [UPSTREAM_ERROR],
  };
}
