/**
 * Length-prefixed frames on a spawn helper's link (fd 3), both ways: a u32 little-endian length of what
 * follows, then that many bytes. The native helper's frames carry a type byte and a run id
 * (native/spawn-helper.c describes them); the Node helper's, a message in V8's serialization.
 */

/** Gathers a link's bytes into whole frames (each with its length prefix), copying a large frame at most once. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private need = 0;

  /** Frames outside [minBytes, maxBytes] (prefix included) are refused: push throws. */
  constructor(
    private readonly onFrame: (frame: Buffer) => void,
    private readonly minBytes: number,
    private readonly maxBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    for (;;) {
      if (this.need === 0) {
        if (this.bytes < 4) return;
        this.need = 4 + this.take(4, false).readUInt32LE(0);
        if (this.need < this.minBytes || this.need > this.maxBytes) throw new Error(`a frame of ${this.need} bytes`);
      }
      if (this.bytes < this.need) return;
      const frame = this.take(this.need, true);
      this.need = 0;
      this.onFrame(frame);
    }
  }

  /** The first n bytes, removed from the queue when `consume`. */
  private take(n: number, consume: boolean): Buffer {
    const first = this.chunks[0]!;
    const whole = first.length >= n ? first.subarray(0, n) : Buffer.concat(this.chunks, n);
    if (!consume) return whole;
    let left = n;
    while (left > 0) {
      const head = this.chunks[0]!;
      if (head.length > left) {
        this.chunks[0] = head.subarray(left);
        left = 0;
      } else {
        this.chunks.shift();
        left -= head.length;
      }
    }
    this.bytes -= n;
    return whole;
  }
}

/** `payload` with its length prefix. */
export function framed(payload: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(4 + payload.length);
  frame.writeUInt32LE(payload.length, 0);
  payload.copy(frame, 4);
  return frame;
}
