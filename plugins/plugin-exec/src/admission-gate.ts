import { GatewayError } from '@tkgate/core';

export const busy = () =>
  new GatewayError(503, 'busy', 'too many commands are running; try again shortly', { headers: { 'Retry-After': '1' } });

/**
 * At most `limit` holders at once; up to `maxQueue` more wait in order; past that, 503 busy at once.
 * A waiter whose client goes away leaves the queue.
 */
export class AdmissionGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxQueue: number,
  ) {}

  /** Holders right now (running commands, for the global gate). */
  get running(): number {
    return this.active;
  }

  async enter(signal: AbortSignal): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxQueue) throw busy();
    await new Promise<void>((resolve, reject) => {
      const admit = () => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = () => {
        const index = this.waiting.indexOf(admit);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason);
      };
      this.waiting.push(admit);
      signal.addEventListener('abort', leave, { once: true });
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
  }
}
