/**
 * Replaces secret values with `***` in text a command or an upstream produced, so that output, logs and
 * answers never repeat a credential the gateway handed out. Values shorter than MIN_MASKED_LENGTH are
 * not masked: masking "1" would mangle every number in every output.
 */
export const MASK = '***';
export const MIN_MASKED_LENGTH = 4;

/** Passing values (secret fields' values of calls) masked at once: the most recent ones; each costs every masked text a search. */
export const MAX_PASSING_VALUES = 256;

export class SecretMask {
  /** Longest first, so that a value containing another is masked whole. */
  private values: string[] = [];
  /** The values of references, masked for the gateway's life. */
  private readonly kept = new Set<string>();
  /** Values that came with calls (`secret: true` fields), oldest first, at most MAX_PASSING_VALUES. */
  private readonly passing = new Set<string>();
  /** Values held by a call or run in progress, with how many hold each: never dropped while held. */
  private readonly held = new Map<string, number>();

  /** Adds a value to mask from now on (a value read anew from a changed file is added; the old one stays). */
  add(value: string): void {
    if (value.length < MIN_MASKED_LENGTH || this.kept.has(value)) return;
    this.kept.add(value);
    this.sortValues();
  }

  /** Adds a value a call brought (a secret field's): masked while it is among the MAX_PASSING_VALUES most recent ones. */
  addPassing(value: string): void {
    if (value.length < MIN_MASKED_LENGTH || this.kept.has(value)) return;
    const known = this.passing.delete(value);
    this.passing.add(value);
    if (known) return;
    if (this.passing.size > MAX_PASSING_VALUES) this.passing.delete(this.passing.values().next().value!);
    this.sortValues();
  }

  /**
   * Masks a value while a call or run that brought it is in progress (released by the function returned), and among
   * the passing values after: no flood of other values can drop it while it may still be printed.
   */
  hold(value: string): () => void {
    if (value.length < MIN_MASKED_LENGTH || this.kept.has(value)) return () => undefined;
    this.held.set(value, (this.held.get(value) ?? 0) + 1);
    this.addPassing(value);
    this.sortValues();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const count = this.held.get(value)! - 1;
      if (count > 0) this.held.set(value, count);
      else {
        this.held.delete(value);
        this.sortValues();
      }
    };
  }

  private sortValues(): void {
    this.values = [...new Set([...this.kept, ...this.held.keys(), ...this.passing])].sort((a, b) => b.length - a.length);
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
   * Where the part of `text` held back for the next chunk begins: its last `longest - 1` characters, whatever they
   * are (a value cut by a chunk boundary may follow), moved past any whole value that runs across that point; 0..
   * `text.length`. What is held never depends on whether the text begins a value: a caller who can make a command
   * print their text learns nothing from what the stream holds back (docs/secrets.md).
   */
  holdFrom(text: string): number {
    let from = Math.max(0, text.length - Math.max(0, this.longest - 1));
    for (let moved = true; moved && from > 0 && from < text.length;) {
      moved = false;
      for (const value of this.values) {
        const at = text.lastIndexOf(value, from - 1);
        if (at >= 0 && at + value.length > from) {
          from = at + value.length;
          moved = true;
        }
      }
    }
    return from;
  }

  /** JSON-able data with every string (keys too) masked; the same object when nothing needed masking. */
  maskData(data: unknown): unknown {
    if (this.empty) return data;
    if (typeof data === 'string') return this.mask(data);
    if (data === null || typeof data !== 'object') return data;
    if (Array.isArray(data)) return data.map((item) => this.maskData(item));
    return Object.fromEntries(Object.entries(data).map(([key, value]) => [this.mask(key), this.maskData(value)]));
  }

  /**
   * A mask for one stream of text chunks (a run's output): a value cut across two chunks is masked too. With
   * `release`, what is held back is passed to it, masked, once no chunk has followed for HOLD_PAUSE_MS (a command
   * waiting shows its last line); without, it waits for the next chunk or the end.
   */
  stream(release?: (text: string) => void): SecretStreamMask {
    return new SecretStreamMask(this, release);
  }
}

/**
 * How long a stream's held-back end waits for the next chunk. The pieces of one write of a command arrive back to
 * back; a value printed in pieces with pauses between them is not masked whole (docs/secrets.md).
 */
export const HOLD_PAUSE_MS = 50;

/**
 * Masks a stream chunk by chunk. A chunk's end that could be the start of a secret is held back until the
 * next chunk shows whether it is one, or a pause (with `release`); `end()` gives what is left. Text out never holds
 * a known value written in one piece.
 */
export class SecretStreamMask {
  private held = '';
  private pause: NodeJS.Timeout | undefined;
  private settle: NodeJS.Immediate | undefined;

  constructor(
    private readonly mask: SecretMask,
    private readonly release?: (text: string) => void,
  ) {}

  /** The text of `chunk` that can be passed on now, masked. */
  push(chunk: string): string {
    if (this.mask.empty && this.held === '') return chunk;
    this.stopWaiting();
    const text = this.held + chunk;
    const from = this.mask.holdFrom(text);
    this.held = text.slice(from);
    if (this.held !== '' && this.release) this.pause = setTimeout(this.paused, HOLD_PAUSE_MS).unref();
    return this.mask.mask(text.slice(0, from));
  }

  /** What was held back, masked, once the stream has ended. */
  end(): string {
    this.stopWaiting();
    const rest = this.mask.mask(this.held);
    this.held = '';
    return rest;
  }

  /**
   * The pause is over: released after the poll phase of this loop turn, so that a chunk already waiting to be read
   * (the loop was busy for longer than the pause) is pushed first and joins the held text.
   */
  private readonly paused = (): void => {
    this.pause = undefined;
    this.settle = setImmediate(() => {
      this.settle = undefined;
      const rest = this.end();
      if (rest !== '') this.release!(rest);
    });
  };

  private stopWaiting(): void {
    if (this.pause) clearTimeout(this.pause);
    if (this.settle) clearImmediate(this.settle);
    this.pause = this.settle = undefined;
  }
}
