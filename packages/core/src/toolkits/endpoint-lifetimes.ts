import type { Logger } from '../log.js';
import type { CompiledEndpoint } from './compiled-toolkit.js';

/**
 * An endpoint version's life as its type sees it: loaded (EndpointType.onLoad) when a load or reload makes it
 * live, and, counting its requests in flight, retired (EndpointType.onRetire) when a reload replaced or removed it
 * and its last request finished.
 */
export class EndpointLifetimes {
  private readonly inFlight = new Map<CompiledEndpoint, number>();
  private readonly retiring = new Set<CompiledEndpoint>();

  constructor(private readonly log: Logger) {}

  /** Counts a request on the endpoint; call the returned function once when it is over. */
  enter(endpoint: CompiledEndpoint): () => void {
    this.inFlight.set(endpoint, (this.inFlight.get(endpoint) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const count = this.inFlight.get(endpoint)! - 1;
      if (count > 0) this.inFlight.set(endpoint, count);
      else {
        this.inFlight.delete(endpoint);
        if (this.retiring.delete(endpoint)) this.notify(endpoint);
      }
    };
  }

  /** These versions are live now (new ones): each type with onLoad is told, before any request reaches them. */
  load(endpoints: Iterable<CompiledEndpoint>): void {
    for (const endpoint of endpoints) {
      const { type } = endpoint;
      if (!type.onLoad) continue;
      try {
        type.onLoad({ toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint }, endpoint.typeConfig);
      } catch (err) {
        this.log.error('endpoint onLoad failed', { endpoint_type: type.type, toolkit: endpoint.toolkit, endpoint: endpoint.path, err });
      }
    }
  }

  /** These versions are no longer live: each is retired now, or when its last request finishes. */
  retire(endpoints: Iterable<CompiledEndpoint>): void {
    for (const endpoint of endpoints) {
      if (this.inFlight.has(endpoint)) this.retiring.add(endpoint);
      else this.notify(endpoint);
    }
  }

  private notify(endpoint: CompiledEndpoint): void {
    const { type } = endpoint;
    if (!type.onRetire) return;
    const identity = { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint };
    const failed = (err: unknown) =>
      this.log.error('endpoint onRetire failed', { endpoint_type: type.type, toolkit: endpoint.toolkit, endpoint: endpoint.path, err });
    try {
      void Promise.resolve(type.onRetire(identity)).catch(failed);
    } catch (err) {
      failed(err);
    }
  }
}
