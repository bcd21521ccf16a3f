/**
 * Runs database writes one after another, in the order they were asked for. Session changes happen
 * in memory synchronously; replaying them to the database in the same order keeps both identical
 * (an eviction's delete can never overtake the insert it undoes, a last-use update never follows a logout's delete).
 */
export class OrderedWriter {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(write: () => Promise<T>): Promise<T> {
    const result = this.tail.then(write);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once every write asked for so far has finished. */
  async drain(): Promise<void> {
    let seen: Promise<unknown>;
    do {
      seen = this.tail;
      await seen;
    } while (seen !== this.tail);
  }
}
