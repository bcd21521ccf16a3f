import { PassThrough } from 'node:stream';
import { invalidPayload } from '../../errors.js';
import type { GatewayContext } from '../../http/context.js';
import type { RunFeeds } from './run-feeds.js';
import { SSE_KEEPALIVE, sseEvent, wantsEventStream } from './run-sse.js';
import { chunkEvent, nodeOf, plainText } from '../node-routes.js';
import type { RunStore } from '../run-store.js';

/** A comment on an idle event stream this often. */
const KEEPALIVE_MS = 15_000;

/** `Last-Event-ID` (a reconnecting EventSource sends it) or `?after=`: the last chunk the client has. */
export function afterOf(ctx: GatewayContext): number {
  const header = ctx.get('Last-Event-ID');
  const query = ctx.query.after;
  const [field, text] = header !== '' ? ['Last-Event-ID', header] : ['after', Array.isArray(query) ? query[0] : query];
  if (text === undefined || text === '') return 0;
  if (!/^\d{1,15}$/.test(text)) throw invalidPayload([{ field, rule: 'format', message: `${field} must be a chunk number (0, 1, 2, ...)` }]);
  return Number(text);
}

/** The output as plain text: every chunk stored so far, stdout and stderr in the order they came. */
async function plainOutput(ctx: GatewayContext, store: Pick<RunStore, 'chunksAfter'>, runId: string, after: number, node: string | undefined): Promise<void> {
  const chunks = await store.chunksAfter(runId, after);
  ctx.status = 200;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = plainText(chunks, node);
}

/**
 * The output as Server-Sent Events: the chunks after `after`, then live ones as they come (a follower), then `end`.
 * A write the socket has no room for holds the follower's place in the feed until the socket drains, so a client
 * that does not read costs its socket's buffer, never a copy of the output.
 */
function eventStream(ctx: GatewayContext, feeds: Pick<RunFeeds, 'follow'>, runId: string, after: number, node: string | undefined): void {
  const stream = new PassThrough();
  let closed = false;
  let unfollow: (() => void) | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    unfollow?.();
    stream.end();
  };
  const room = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        resolve();
      };
      stream.once('drain', done);
      stream.once('close', done);
    });
  const keepalive = setInterval(() => stream.writableLength === 0 && stream.write(SSE_KEEPALIVE), KEEPALIVE_MS);
  try {
    unfollow = feeds.follow(
      runId,
      after,
      {
        chunk: (chunk) => {
          const event = closed ? undefined : chunkEvent(chunk, node);
          return event === undefined || stream.write(event) ? undefined : room();
        },
        end: (ending) => {
          if (!closed) stream.write(sseEvent('end', JSON.stringify(ending)));
          close();
        },
        gone: close,
      },
      ctx.state.caller === undefined ? undefined : String(ctx.state.caller.id),
    );
  } catch (err) {
    clearInterval(keepalive);
    throw err;
  }
  // A run that had ended is told whole before follow returns: the stream has closed already.
  if (closed) unfollow();
  ctx.status = 200;
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.body = stream;
  ctx.res.once('close', close);
}

/** `GET {base}/runs/:id/output`: Server-Sent Events for `Accept: text/event-stream`, else the output so far as text. */
export async function answerOutput(
  ctx: GatewayContext,
  s: { store: Pick<RunStore, 'chunksAfter'>; feeds: Pick<RunFeeds, 'follow'> },
  runId: string,
): Promise<void> {
  const after = afterOf(ctx);
  // `?node=NAME`: one node of a run with nodes (docs/fleet.md, "Output").
  const node = nodeOf(ctx);
  if (wantsEventStream(ctx.get('Accept'))) eventStream(ctx, s.feeds, runId, after, node);
  else await plainOutput(ctx, s.store, runId, after, node);
}
