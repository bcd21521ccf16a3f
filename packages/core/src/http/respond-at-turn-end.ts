import type { GatewayMiddleware } from './context.js';

let turnEnd: Promise<void> | undefined;

/** Settles once the current event-loop turn's I/O callbacks have all run (setImmediate: the check phase). */
export function endOfTurn(): Promise<void> {
  return (turnEnd ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turnEnd = undefined;
      resolve();
    }),
  ));
}

/**
 * Holds each finished response until the end of the event-loop turn, so the responses of one turn are
 * written back to back. Written one at a time, between the reads of the next requests, every response
 * woke the client's process through the kernel on its own: measured, half of a status call's CPU went to
 * that wake-up on this machine (loopback, 2 cores). Back to back, one wake-up serves the batch: status
 * 16k -> 33k req/s, the internal endpoint 7k -> 14k. An idle gateway waits for nothing: the turn ends at once.
 * Not async: one promise fewer per request.
 */
export const respondAtTurnEnd: GatewayMiddleware = (_ctx, next) => next().then(endOfTurn);
