import { GatewayError } from '../errors.js';

/** The 503 a full queue answers: the client should try again in a second. */
const busy = (message: string) => new GatewayError(503, 'busy', message, { headers: { 'Retry-After': '1' } });

/**
 * At most `limit` holders at once; up to `maxQueue` more wait in order; past that, 503 busy at once.
 * A waiter whose client goes away leaves the queue. Part of the plugin API: endpoint types that hold
 * scarce resources (processes, upstream connections, memory) bound themselves with it.
 */
export class AdmissionGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  /** Holders right now (for the exec plugin's global gate: commands running). */
  get running(): number {
    return this.active;
  }

  constructor(
    private readonly limit: number,
    private readonly maxQueue: number,
    /** The message of the 503 busy error. */
    private readonly busyMessage = 'too many requests are running; try again shortly',
  ) {}

  /**
   * A place at once when one is free (the function that gives it back), else undefined: then `enter`
   * waits in the queue. Lets a caller skip making an AbortSignal (API 1.2) when nothing waits.
   */
  tryEnter(): (() => void) | undefined {
    if (this.active >= this.limit) return undefined;
    this.active++;
    return this.releaser();
  }

  /** Resolves with the function that gives the place back (calling it twice is harmless). */
  async enter(signal: AbortSignal): Promise<() => void> {
    const admitted = this.tryEnter();
    if (admitted) return admitted;
    if (this.waiting.length >= this.maxQueue) throw busy(this.busyMessage);
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

/**
 * One gate per live endpoint version (EndpointIdentity.key), made on first use with that endpoint's
 * `max_concurrency` and `max_queue`; a gate goes with the last request of an endpoint version a reload replaced.
 */
export class EndpointGates {
  private readonly gates = new WeakMap<object, AdmissionGate>();

  constructor(private readonly busyMessage?: string) {}

  of(key: object, limits: { max_concurrency: number; max_queue: number }): AdmissionGate {
    let gate = this.gates.get(key);
    if (!gate) this.gates.set(key, (gate = new AdmissionGate(limits.max_concurrency, limits.max_queue, this.busyMessage)));
    return gate;
  }
}
