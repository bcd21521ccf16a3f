import { StringDecoder } from 'node:string_decoder';
import type { Logger } from '../../log.js';
import type { OutputSink } from '../../plugins/plugin-api.js';
import type { OutputChunk } from '../run-store.js';

/** A chunk ends at this size at the latest (in bytes), at its last newline when it has one. */
export const MAX_CHUNK_BYTES = 64 * 1024;
/** ... or this long after its first byte. */
export const MAX_CHUNK_MS = 100;
/**
 * A batch holds chunks of at most this many bytes (one chunk alone may reach MAX_CHUNK_BYTES): one INSERT's text
 * stays far below every database's statement size. Unbounded, the batch of a command printing faster than the
 * database stores grows with the backlog, and on MariaDB one past `max_allowed_packet` (16 MiB by default; bytes
 * travel as hex, twice their size: 200 chunks of 64 KiB are refused) would be refused and tried again whole.
 */
export const MAX_BATCH_BYTES = 2 * 1024 * 1024;
/** A batch whose write failed is tried again this much later. */
const RETRY_MS = 500;
/** ... at most this often (a database down for 5 s loses that output, never the run). */
const ATTEMPTS = 10;

type Stream = 'stdout' | 'stderr';

/** Where chunks go: the writer that stores them in batches (and tells the followers once stored). */
export interface ChunkWriter {
  add(chunk: OutputChunk): void;
}

/**
 * Text cut into chunks of at most MAX_CHUNK_BYTES, each ending at its last newline when it has one. The bytes of
 * a string are at most 3 per UTF-16 unit, so a piece of MAX_CHUNK_BYTES / 3 units always fits; longer pieces are
 * measured.
 */
function* pieces(text: string): Generator<string> {
  let rest = text;
  while (Buffer.byteLength(rest) > MAX_CHUNK_BYTES) {
    let end = MAX_CHUNK_BYTES;
    while (Buffer.byteLength(rest.slice(0, end)) > MAX_CHUNK_BYTES) end = Math.floor(end * 0.9);
    // Never between the halves of a surrogate pair.
    if (/[\uD800-\uDBFF]/.test(rest[end - 1] ?? '')) end--;
    const newline = rest.lastIndexOf('\n', end - 1);
    if (newline > 0) end = newline + 1;
    yield rest.slice(0, end);
    rest = rest.slice(end);
  }
  if (rest !== '') yield rest;
}

/** One stream's text not yet in a chunk. */
class PendingText {
  text = '';
  timer: NodeJS.Timeout | undefined;
  readonly decoder = new StringDecoder('utf8');

  constructor(
    readonly node: string | null,
    readonly stream: Stream,
  ) {}
}

/** What a node of a run with nodes has kept of its output. */
export interface NodeBytes {
  bytes: number;
  truncated: boolean;
}

/**
 * A running run's output sink: bytes of each stream become text (a character split across writes is kept
 * whole), cut into numbered chunks: at a newline as soon as one arrives, else when 100 ms have passed since
 * the chunk's first byte or it reached 64 KiB. Output is kept up to `maxBytes`; past it, the rest is dropped and
 * the run says truncated (the command goes on). A run with nodes (`perNode`) keeps each node's output apart, up to
 * `maxBytes` per node, its chunks tagged with the node, and numbers the nodes' events with the same sequence.
 */
export class RunOutput implements OutputSink {
  private readonly streams = new Map<string, PendingText>();
  private readonly nodes = new Map<string, NodeBytes>();
  private seq = 0;
  private closed = false;
  /** Bytes kept (the rest was dropped). */
  bytes = 0;
  truncated = false;
  readonly writeNode: OutputSink['writeNode'];

  constructor(
    private readonly maxBytes: number,
    private readonly writer: ChunkWriter,
    perNode = false,
  ) {
    this.writeNode = perNode ? (node, stream, bytes) => this.take(node, stream, bytes) : undefined;
  }

  write(stream: Stream, bytes: Uint8Array): void {
    this.take(null, stream, bytes);
  }

  /** What a node has kept so far. */
  nodeBytes(node: string): NodeBytes {
    return this.nodes.get(node) ?? { bytes: 0, truncated: false };
  }

  /** A node's change, after the output it wrote before it: the next number of the run's sequence. */
  nodeEvent(node: string, data: string): void {
    if (this.closed) return;
    for (const stream of ['stdout', 'stderr'] as const) if (this.streams.has(`${node}\0${stream}`)) this.flushStream(node, stream);
    this.writer.add({ seq: ++this.seq, stream: 'node', node, data });
  }

  private take(node: string | null, stream: Stream, bytes: Uint8Array): void {
    if (this.closed || bytes.byteLength === 0) return;
    let kept = bytes;
    const count: NodeBytes = node === null ? this : (this.nodes.get(node) ?? this.nodes.set(node, { bytes: 0, truncated: false }).get(node)!);
    if (count.bytes + kept.byteLength > this.maxBytes) {
      kept = kept.subarray(0, Math.max(0, this.maxBytes - count.bytes));
      count.truncated = true;
      this.truncated = true;
    }
    if (kept.byteLength === 0) return;
    if (node !== null) count.bytes += kept.byteLength;
    this.bytes += kept.byteLength;
    const pending = this.pendingOf(node, stream);
    pending.text += pending.decoder.write(Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength));
    const newline = pending.text.lastIndexOf('\n');
    if (newline >= 0) {
      this.cut(node, stream, pending.text.slice(0, newline + 1));
      pending.text = pending.text.slice(newline + 1);
    }
    if (Buffer.byteLength(pending.text) >= MAX_CHUNK_BYTES) this.flushStream(node, stream);
    if (pending.text === '') {
      clearTimeout(pending.timer);
      pending.timer = undefined;
    } else pending.timer ??= setTimeout(() => this.flushStream(node, stream), MAX_CHUNK_MS);
  }

  private pendingOf(node: string | null, stream: Stream): PendingText {
    const key = `${node ?? ''}\0${stream}`;
    let pending = this.streams.get(key);
    if (!pending) this.streams.set(key, (pending = new PendingText(node, stream)));
    return pending;
  }

  /** The command has ended: what is pending becomes the last chunks; nothing is taken afterwards. */
  close(): void {
    for (const pending of this.streams.values()) {
      pending.text += pending.decoder.end();
      this.flushStream(pending.node, pending.stream);
    }
    this.closed = true;
  }

  private flushStream(node: string | null, stream: Stream): void {
    const pending = this.pendingOf(node, stream);
    clearTimeout(pending.timer);
    pending.timer = undefined;
    const text = pending.text;
    pending.text = '';
    this.cut(node, stream, text);
  }

  private cut(node: string | null, stream: Stream, text: string): void {
    for (const data of pieces(text)) this.writer.add(node === null ? { seq: ++this.seq, stream, data } : { seq: ++this.seq, stream, node, data });
  }
}

/**
 * Stores a run's chunks in batches: one INSERT for every chunk that came while the previous one was written (up to
 * MAX_BATCH_BYTES), so a fast command costs a statement per batch, never per chunk; each batch goes to `stored`
 * once committed (the followers on this instance get chunks that any other instance can read too). A failed batch
 * is tried again, for a while.
 */
export class BatchedChunkWriter implements ChunkWriter {
  private queue: OutputChunk[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    private readonly store: (chunks: OutputChunk[]) => Promise<void>,
    private readonly stored: (chunks: OutputChunk[]) => void,
    private readonly log: Logger,
  ) {}

  add(chunk: OutputChunk): void {
    this.queue.push(chunk);
    this.writing ??= this.drain();
  }

  /** Resolves once every chunk added so far is stored. */
  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.nextBatch();
      for (let attempt = 1; ; attempt++) {
        try {
          await this.store(batch);
          this.stored(batch);
          break;
        } catch (err) {
          if (attempt >= ATTEMPTS) {
            this.log.error('run output could not be stored; dropped', { error: (err as Error).message, chunks: batch.length });
            break;
          }
          this.log.warn('run output could not be stored; trying again', { error: (err as Error).message, chunks: batch.length });
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    }
    this.writing = undefined;
  }

  /** The oldest chunks waiting, up to MAX_BATCH_BYTES (at least one). */
  private nextBatch(): OutputChunk[] {
    let bytes = 0;
    let count = 0;
    while (count < this.queue.length) {
      bytes += Buffer.byteLength(this.queue[count]!.data);
      if (count > 0 && bytes > MAX_BATCH_BYTES) break;
      count++;
    }
    return this.queue.splice(0, count);
  }
}
