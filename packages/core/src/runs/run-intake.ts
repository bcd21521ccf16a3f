/** One item waiting for its batch, and how its caller hears the outcome. */
interface Pending<Item, Result> {
  item: Item;
  resolve(result: Result): void;
  reject(err: unknown): void;
}

/**
 * Work on items of one key, done in batches: the first item at once, the items that arrive while a batch is in
 * flight as the next batch (at most `maxBatch`), one batch of a key at a time. A burst of N items of one key costs
 * a few batches rather than N, so a lock the work takes per batch is waited for a few times rather than N times.
 * `work` answers one result per item, in order; when it fails, every item of its batch fails with its error.
 */
export class KeyedBatches<Item, Result> {
  private readonly pending = new Map<string, Array<Pending<Item, Result>>>();

  constructor(
    private readonly work: (key: string, items: Item[]) => Promise<Result[]>,
    private readonly maxBatch: number,
  ) {}

  add(key: string, item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const waiting = this.pending.get(key);
      if (waiting) {
        waiting.push({ item, resolve, reject });
        return;
      }
      this.pending.set(key, [{ item, resolve, reject }]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const waiting = this.pending.get(key)!;
      if (waiting.length === 0) {
        this.pending.delete(key);
        return;
      }
      const batch = waiting.splice(0, this.maxBatch);
      try {
        const results = await this.work(
          key,
          batch.map((pending) => pending.item),
        );
        batch.forEach((pending, i) => pending.resolve(results[i]!));
      } catch (err) {
        for (const pending of batch) pending.reject(err);
      }
    }
  }
}
