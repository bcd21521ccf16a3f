/**
 * Failed logins per key (username + client address) within a sliding window. Past the maximum, the
 * key is refused until its oldest failure leaves the window. Memory is bounded: past `maxKeys` the
 * least recently failed keys are forgotten first.
 */
export class LoginLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Seconds until the key may try again; 0 when it may try now. */
  retryAfterSeconds(key: string, now = Date.now()): number {
    const recent = this.recent(key, now);
    if (recent.length < this.maxFailures) return 0;
    const freeAt = recent[recent.length - this.maxFailures]! + this.windowMs;
    return Math.max(1, Math.ceil((freeAt - now) / 1000));
  }

  recordFailure(key: string, now = Date.now()): void {
    const recent = this.recent(key, now);
    recent.push(now);
    if (recent.length > this.maxFailures) recent.splice(0, recent.length - this.maxFailures);
    this.failures.delete(key);
    this.failures.set(key, recent);
    if (this.failures.size > this.maxKeys) this.failures.delete(this.failures.keys().next().value!);
  }

  reset(key: string): void {
    this.failures.delete(key);
  }

  /** Forgets keys whose failures have all left the window. */
  sweep(now = Date.now()): void {
    for (const key of [...this.failures.keys()]) {
      if (this.recent(key, now).length === 0) this.failures.delete(key);
    }
  }

  private recent(key: string, now: number): number[] {
    const all = this.failures.get(key);
    if (!all) return [];
    const cutoff = now - this.windowMs;
    const firstRecent = all.findIndex((at) => at > cutoff);
    if (firstRecent === -1) {
      this.failures.delete(key);
      return [];
    }
    if (firstRecent > 0) all.splice(0, firstRecent);
    return all;
  }
}
