/**
 * Body read buffers, shared by the upstream connections of one pool. A connection holds one only while a
 * read fills it or a write to the client still refers to it: between answers (and idle in the pool) it
 * holds just its small head buffer. Reads of 512 KiB cost less gateway CPU per passthrough download than
 * smaller ones: fewer system calls on both sockets (docs/performance.md, "Passthrough memory"). Freed buffers are
 * kept for the next reads, up to MAX_FREE: a Buffer per read is collected late by V8, and RSS grew with
 * the first large download (docs/performance.md, "Passthrough memory").
 */
export const BODY_READ_BYTES = 512 * 1024;
/** What an answer's first read fills: its head, and the whole body of a small answer. */
export const HEAD_READ_BYTES = 16 * 1024;
/** The free buffers kept: 16 MiB, enough for 16 downloads reading at once to reuse theirs. */
const MAX_FREE = 32;

export class ReadBuffers {
  private readonly free: Buffer[] = [];

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(BODY_READ_BYTES);
  }

  give(buffer: Buffer): void {
    if (this.free.length < MAX_FREE) this.free.push(buffer);
  }
}
