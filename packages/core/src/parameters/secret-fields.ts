import { MASK, type SecretMask } from '../secrets/secret-mask.js';

/**
 * `secret: true` fields (docs/toolkits.md, "Secret fields"): the value goes to the command or upstream in the request
 * context and nowhere else. What keeps a payload's fields (audit details, a run's `payload`) keeps `***` for them,
 * and the value joins the gateway's mask, so logs, error answers, dry runs and output show `***` where it appears.
 */

/** The payload fields listed in `fields` that the call has, a secret one as `***`: nothing else of the payload is kept. */
export function keptFields(
  payload: Readonly<Record<string, unknown>>,
  fields: readonly string[],
  secret: ReadonlySet<string> | undefined,
): Record<string, unknown> | undefined {
  let kept: Record<string, unknown> | undefined;
  for (const field of fields) if (Object.hasOwn(payload, field)) (kept ??= {})[field] = secret?.has(field) ? MASK : payload[field];
  return kept;
}

const NOTHING_HELD = (): void => undefined;

/**
 * Masks the secret fields' values of a payload while the call (step 4) or the run (when it starts) is in progress,
 * and among the mask's recent passing values after; the function returned ends the hold.
 */
export function holdSecretValues(secret: ReadonlySet<string> | undefined, payload: unknown, mask: SecretMask): () => void {
  if (!secret || payload === null || typeof payload !== 'object') return NOTHING_HELD;
  const releases: Array<() => void> = [];
  for (const field of secret) {
    const value = (payload as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    releases.push(mask.hold(typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value)));
  }
  return releases.length === 0 ? NOTHING_HELD : () => releases.forEach((release) => release());
}

/**
 * Why a secret field cannot be the runs' concurrency key (its value is kept in every run's row to order them), or
 * undefined.
 */
export function secretKeyProblem(secret: ReadonlySet<string> | undefined, concurrencyKey: string | undefined): string | undefined {
  const field = concurrencyKey && /^\$payload\.(.+)$/.exec(concurrencyKey)?.[1];
  return field && secret?.has(field) ? `${field} is a secret field: a concurrency key's value is kept with each run` : undefined;
}
