/**
 * Body read buffers, shared by the upstream connections of one pool. A connection holds one only while a
 * read fills it or a write to the client still refers to it: between answers (and idle in the pool) it
 * holds just its small head buffer. Reads of 512 KiB measured 10-30% less gateway CPU per 1 MB passthrough
 * download than reads of 128 KiB or 256 KiB: fewer system calls on both sockets (docs/performance.md).
 * Freed buffers are kept for the next reads, up to MAX_FREE: a Buffer per read is collected late by V8
 * (a first 100 MB download once raised RSS by 47-68 MB).
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
