/**
 * Replaces secret values with `***` in text a command or an upstream produced, so that output, logs and
 * answers never repeat a credential the gateway handed out. Values shorter than MIN_MASKED_LENGTH are
 * not masked: masking "1" would mangle every number in every output.
 */
export const MASK = '***';
export const MIN_MASKED_LENGTH = 4;

export class SecretMask {
  /** Longest first, so that a value containing another is masked whole. */
  private values: string[] = [];

  /** Adds a value to mask from now on (a value read anew from a changed file is added; the old one stays). */
  add(value: string): void {
    if (value.length < MIN_MASKED_LENGTH || this.values.includes(value)) return;
    this.values = [...this.values, value].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.values.length === 0;
  }

  /** The longest value: what a stream must hold back at most. */
  get longest(): number {
    return this.values[0]?.length ?? 0;
  }

  /** `text` with every occurrence of a known value replaced by `***`. */
  mask(text: string): string {
    let out = text;
    for (const value of this.values) if (out.includes(value)) out = out.split(value).join(MASK);
    return out;
  }

  /**
   * Where the part of `text` that may still become a value begins: the earliest index whose rest is a proper
   * beginning of a value (a value cut by a chunk boundary may follow), moved past any whole value that runs
   * across it; `text.length` when nothing needs holding back.
   */
  holdFrom(text: string): number {
    let from = text.length;
    for (let i = Math.max(0, text.length - this.longest + 1); i < text.length; i++) {
      const rest = text.slice(i);
      if (this.values.some((value) => value.length > rest.length && value.startsWith(rest))) {
        from = i;
        break;
      }
    }
    for (const value of this.values) {
      const at = from > 0 ? text.lastIndexOf(value, from - 1) : -1;
      if (at >= 0 && at + value.length > from) return this.holdAfter(text, at + value.length);
    }
    return from;
  }

  private holdAfter(text: string, end: number): number {
    const from = this.holdFrom(text.slice(end));
    return end + from;
  }

  /** JSON-able data with every string (keys too) masked; the same object when nothing needed masking. */
  maskData(data: unknown): unknown {
    if (this.empty) return data;
    if (typeof data === 'string') return this.mask(data);
    if (data === null || typeof data !== 'object') return data;
    if (Array.isArray(data)) return data.map((item) => this.maskData(item));
    return Object.fromEntries(Object.entries(data).map(([key, value]) => [this.mask(key), this.maskData(value)]));
  }

  /** A mask for one stream of text chunks (a run's output): a value cut across two chunks is masked too. */
  stream(): SecretStreamMask {
    return new SecretStreamMask(this);
  }
}

/**
 * Masks a stream chunk by chunk. A chunk's end that could be the start of a secret is held back until the
 * next chunk shows whether it is one; `end()` gives what is left. Text out never holds a known value.
 */
export class SecretStreamMask {
  private held = '';

  constructor(private readonly mask: SecretMask) {}

  /** The text of `chunk` that can be passed on now, masked. */
  push(chunk: string): string {
    if (this.mask.empty && this.held === '') return chunk;
    const text = this.held + chunk;
    const from = this.mask.holdFrom(text);
    this.held = text.slice(from);
    return this.mask.mask(text.slice(0, from));
  }

  /** What was held back, masked, once the stream has ended. */
  end(): string {
    const rest = this.mask.mask(this.held);
    this.held = '';
    return rest;
  }
}
