import { createHash } from 'node:crypto';
import { invalidPayload } from '../errors.js';
import type { DetachedPlan } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import type { WaitingQueue } from './run-store.js';

/** A queue's name: the endpoint's toolkit, path and method, hashed to a fixed width. */
export const queueOf = (toolkit: string, endpoint: string, method: string): string =>
  createHash('sha256').update(`${toolkit}\0${endpoint}\0${method}`).digest('hex');

/** Where a run's endpoint is found again: its toolkit, path and method. */
export type EndpointAddress = Pick<WaitingQueue, 'toolkit' | 'endpoint' | 'method'>;

/** The values a concurrency key names (`$payload.x`, `$path.x`, `$context.x`) are read from. */
export interface KeySources {
  payload: Readonly<Record<string, unknown>>;
  pathParams: Readonly<Record<string, unknown>> | undefined;
  context: Readonly<Record<string, unknown>>;
}

/**
 * A run's concurrency key (docs/runs.md, "Queues and keys"): the SHA-256 of the value's text form, so that
 * `1` and `"1"` are one key, as a person reading them would take them. An absent (or null) value is a key of its
 * own. Objects and arrays are refused (400 naming the field; `$context.payload` at load, compile-toolkit.ts): their JSON text depends on key order and spacing,
 * and `["api"]` beside `"api"` would be two keys for one service. A string's hash is the one earlier versions
 * stored, so runs queued before an upgrade keep their key.
 */
export function concurrencyKeyOf(spec: string, sources: KeySources): string {
  const [source, field] = spec.slice(1).split('.', 2) as [string, string];
  const values = source === 'payload' ? sources.payload : source === 'path' ? (sources.pathParams ?? {}) : sources.context;
  const value = values[field] ?? null;
  if (typeof value === 'object' && value !== null) {
    const name = source === 'payload' ? field : `${source}.${field}`;
    const kind = Array.isArray(value) ? 'an array' : 'an object';
    throw invalidPayload([
      { field: name, rule: 'type', message: `${name} is the concurrency key of this endpoint's runs: a string, number or boolean, not ${kind}` },
    ]);
  }
  const text = value === null ? 'null' : JSON.stringify(String(value));
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What a run of an endpoint needs (docs/runs.md): whether its type runs it as a job and how (the type's
 * DetachedPlan: limits, queue bounds, concurrency key, room here), asked once per endpoint version, and the live
 * endpoint a waiting run belongs to. An instance whose toolkits run no job asks the database nothing (`servesJobs`).
 */
export class EndpointPlans {
  private readonly plans = new WeakMap<CompiledEndpoint, DetachedPlan | null>();
  /** Whether the live snapshot has an endpoint that runs as a job, asked once per snapshot. */
  private jobsOf: { snapshot: ToolkitSnapshot; serves: boolean; approvals: boolean } | undefined;

  constructor(private readonly snapshot: () => ToolkitSnapshot) {}

  /** Whether (and how) an endpoint runs as a job: its type's answer, asked once per endpoint version. */
  planOf(endpoint: CompiledEndpoint): DetachedPlan | undefined {
    let plan = this.plans.get(endpoint);
    if (plan === undefined) {
      plan = (endpoint.type.runDetached && endpoint.type.detached?.(endpoint.typeConfig)) || null;
      this.plans.set(endpoint, plan);
    }
    return plan ?? undefined;
  }

  /** The live endpoint a run or queue belongs to, if it is still there. */
  endpointOf(run: EndpointAddress, snapshot = this.snapshot()): CompiledEndpoint | undefined {
    return snapshot.get(run.toolkit)?.routes.get(run.endpoint)?.get(run.method);
  }

  /** Whether any live endpoint runs as a job: an instance with none (and no run of its own) asks the database nothing each tick. */
  servesJobs(): boolean {
    const snapshot = this.snapshot();
    if (this.jobsOf?.snapshot !== snapshot) {
      let [serves, approvals] = [false, false];
      for (const toolkit of snapshot.values())
        for (const methods of toolkit.routes.values())
          for (const endpoint of methods.values()) {
            serves ||= this.planOf(endpoint) !== undefined;
            approvals ||= endpoint.approval !== undefined;
          }
      this.jobsOf = { snapshot, serves, approvals };
    }
    return this.jobsOf.serves;
  }

  /** Whether any live endpoint needs approval: only then are deadlines looked for each second. */
  servesApprovals(): boolean {
    return this.servesJobs() && this.jobsOf!.approvals;
  }
}
