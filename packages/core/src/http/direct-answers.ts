import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/**
 * An answer given on Node's own request and response, before Koa sees the request: it returns true when it
 * answered, false when the request is Koa's after all (anything unusual about it). Koa's context, its
 * middleware stack and on-finished cost a status call more than everything tkgate does for it
 * (docs/performance.md); the hottest answer that needs none of them is given this way, with the same
 * headers, envelope, access line and metrics. `TKGATE_DIRECT_ANSWERS=off` sends everything through Koa.
 */
export type DirectAnswer = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Node's request listener: each direct answer in turn, then Koa's. */
export function withDirectAnswers(koa: RequestListener, answers: readonly DirectAnswer[]): RequestListener {
  if (answers.length === 0) return koa;
  return (req, res) => {
    for (const answer of answers) if (answer(req, res)) return;
    koa(req, res);
  };
}
