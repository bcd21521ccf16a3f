import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput } from 'jose';

/** An unknown `kid` fetches the key set again at most this often: a flood of made-up kids costs one fetch a minute. */
export const KID_REFETCH_MS = 60_000;
/** A key set older than this is fetched again in the background by the next call (retired keys go). */
const MAX_AGE_MS = 10 * 60_000;
/** After a failed fetch, calls fail at once for this long rather than each fetching again. */
const FAILED_FETCH_PAUSE_MS = 5_000;
const FETCH_TIMEOUT_MS = 5_000;
const MAX_DOCUMENT_BYTES = 512 * 1024;

type LocalKeys = ReturnType<typeof createLocalJWKSet>;

/** A refused fetch: why, for the log (the URL is configuration, not a secret). */
export class KeySetUnavailable extends Error {
  override name = 'KeySetUnavailable';
}

async function fetchJson(url: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json' }, redirect: 'error' });
  } catch (err) {
    throw new KeySetUnavailable(`${url}: ${(err as Error).message}`);
  }
  const text = await response.text();
  if (!response.ok) throw new KeySetUnavailable(`${url}: HTTP ${response.status}`);
  if (text.length > MAX_DOCUMENT_BYTES) throw new KeySetUnavailable(`${url}: larger than ${MAX_DOCUMENT_BYTES} bytes`);
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new KeySetUnavailable(`${url}: ${(err as Error).message}`);
  }
}

/**
 * An issuer's signing keys (JWKS): fetched on first use from `jwks_url`, or from the `jwks_uri` of the issuer's
 * OpenID discovery document; fetched again when a token names a `kid` the set lacks, at most once a
 * KID_REFETCH_MS, and calls that arrive while that fetch runs wait for it: an issuer that publishes its new key
 * before signing with it rotates without a failed call.
 */
export class KeySet {
  private keys: LocalKeys | undefined;
  private fetchedAt = 0;
  private failedAt = -Infinity;
  private kidRefetchAt = -Infinity;
  private fetching: Promise<void> | undefined;
  private jwksUrl: string | undefined;

  constructor(
    private readonly issuer: string,
    jwksUrl: string | undefined,
  ) {
    this.jwksUrl = jwksUrl;
  }

  /** The key for a token's header: what jose's jwtVerify asks for. */
  readonly key = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const now = Date.now();
    if (!this.keys) await this.refresh(now);
    else if (now - this.fetchedAt > MAX_AGE_MS && !this.fetching) this.refresh(now).catch(() => undefined);
    try {
      return await this.keys!(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      if (this.fetching) await this.fetching;
      else if (now - this.kidRefetchAt >= KID_REFETCH_MS) {
        this.kidRefetchAt = now;
        await this.refresh(now);
      } else throw err;
      return this.keys!(header, token);
    }
  };

  private refresh(now: number): Promise<void> {
    if (this.fetching) return this.fetching;
    if (now - this.failedAt < FAILED_FETCH_PAUSE_MS)
      return Promise.reject(new KeySetUnavailable(`the key set of ${this.issuer} could not be fetched just now`));
    this.fetching = this.load()
      .then(
        (jwks) => {
          this.keys = createLocalJWKSet(jwks);
          this.fetchedAt = Date.now();
        },
        (err: unknown) => {
          this.failedAt = Date.now();
          throw err;
        },
      )
      .finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  private async load(): Promise<JSONWebKeySet> {
    if (this.jwksUrl === undefined) {
      const discovery = await fetchJson(`${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
      if (typeof discovery.jwks_uri !== 'string') throw new KeySetUnavailable(`the discovery document of ${this.issuer} names no jwks_uri`);
      this.jwksUrl = discovery.jwks_uri;
    }
    const jwks = await fetchJson(this.jwksUrl);
    if (!Array.isArray(jwks.keys)) throw new KeySetUnavailable(`${this.jwksUrl}: not a JSON Web Key Set (no keys)`);
    return jwks as unknown as JSONWebKeySet;
  }
}
