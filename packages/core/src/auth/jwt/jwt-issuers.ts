import { hash } from 'node:crypto';
import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtIssuerConfig } from '../../config/jwt-issuers.js';
import type { Logger } from '../../log.js';
import type { Credential } from '../../sessions/credential.js';
import type { SessionCache } from '../../sessions/session-cache.js';
import type { CallerRecord, UserDirectory } from '../../users/user-directory.js';
import { KeySet, KeySetUnavailable } from './key-set.js';
import { subjectMatches } from './subject-match.js';

/** The signatures accepted: asymmetric only (never `none`, never HMAC, whose key would be public). */
export const JWT_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'];
/** Clock skew allowed on exp, nbf and iat. */
const LEEWAY_S = 60;
/** Verified tokens kept (by hash, until they expire): a machine's steady calls verify one signature, not one each. */
const MAX_VERIFIED = 10_000;

/** Three base64url parts separated by dots: cheap to tell from a session token (43 characters) or a tkg_ key. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
export const looksLikeJwt = (token: string): boolean => token.length < 16_384 && JWT_SHAPE.test(token);

/** Who a verified token is: the entry it matched, its subject, and the scope it calls with. */
export interface JwtIdentity {
  /** The entry's name. */
  readonly issuer: string;
  readonly subject: string;
  /** The toolkits it may call; null = every toolkit its user may call (as an API key's scope). */
  readonly scope: ReadonlySet<string> | null;
  readonly user: string;
  readonly issuedAt: number | null;
  readonly expiresAt: number;
  readonly credential: Credential;
}

/** A token and the user it acts as, as one authenticated request needs them. */
export interface JwtRead {
  jwt: JwtIdentity;
  caller: CallerRecord;
  credential: Credential;
}

/** Why a token was refused: logged, never answered (any failure is 401 unauthorized). */
class Refused extends Error {
  override name = 'Refused';
}

/**
 * `auth.jwt_issuers`: tokens that platforms sign for their workloads, checked with jose (signature from the
 * issuer's key set, iss, aud, exp and nbf with LEEWAY_S, a subject of the list), acting as the entry's user with
 * its toolkit scope. The user is read as an API key's owner is (disabled: refused within sessions.cache_ttl).
 */
export class JwtIssuers {
  private readonly keySets = new Map<string, KeySet>();
  private readonly verified = new Map<string, JwtIdentity>();
  /** Verifications under way: concurrent first calls with one token (a job's parallel requests) verify it once. */
  private readonly verifying = new Map<string, Promise<JwtIdentity>>();

  constructor(
    private readonly entries: readonly JwtIssuerConfig[],
    private readonly users: UserDirectory,
    private readonly callers: SessionCache<CallerRecord>,
    private readonly log: Logger,
  ) {
    for (const entry of entries) {
      const key = `${entry.issuer}\n${entry.jwks_url ?? ''}`;
      if (!this.keySets.has(key)) this.keySets.set(key, new KeySet(entry.issuer, entry.jwks_url));
    }
  }

  get enabled(): boolean {
    return this.entries.length > 0;
  }

  /** A token verified before and not yet expired, with its user when the cache may be trusted; else undefined (ask `find`). */
  cached(token: string, now = Date.now()): JwtRead | undefined {
    const jwt = this.identityOf(hashOf(token), now);
    const caller = jwt && this.callers.get(jwt.user, now);
    return jwt && caller && { jwt, caller, credential: jwt.credential };
  }

  /** The token's identity and user, or undefined when refused (the reason is logged). */
  async find(token: string, now = Date.now()): Promise<JwtRead | undefined> {
    const tokenHash = hashOf(token);
    let jwt = this.identityOf(tokenHash, now);
    try {
      jwt ??= await this.verifyOnce(token, tokenHash);
      const caller = await this.callerOf(jwt.user, now);
      if (!caller) throw new Refused(`user ${jwt.user} of issuer ${jwt.issuer} does not exist`);
      return { jwt, caller, credential: jwt.credential };
    } catch (err) {
      if (!(err instanceof Refused || err instanceof errors.JOSEError || err instanceof KeySetUnavailable)) throw err;
      this.log.warn('workload token refused', { reason: reasonOf(err), ...claimsForLog(token) });
      return undefined;
    }
  }

  private verifyOnce(token: string, tokenHash: string): Promise<JwtIdentity> {
    let pending = this.verifying.get(tokenHash);
    if (!pending) {
      pending = this.verify(token, tokenHash)
        .then((jwt) => this.remember(tokenHash, jwt))
        .finally(() => this.verifying.delete(tokenHash));
      this.verifying.set(tokenHash, pending);
    }
    return pending;
  }

  private identityOf(tokenHash: string, now: number): JwtIdentity | undefined {
    const jwt = this.verified.get(tokenHash);
    if (jwt && jwt.expiresAt + LEEWAY_S * 1000 > now) return jwt;
    if (jwt) this.verified.delete(tokenHash);
    return undefined;
  }

  private remember(tokenHash: string, jwt: JwtIdentity): JwtIdentity {
    if (this.verified.size >= MAX_VERIFIED) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(tokenHash, jwt);
    return jwt;
  }

  private callerOf(username: string, now: number): Promise<CallerRecord | undefined> {
    return this.callers.through(username, now, () => this.users.findByUsername(username));
  }

  private async verify(token: string, tokenHash: string): Promise<JwtIdentity> {
    const claims = decodeJwt(token);
    const candidates = this.entries.filter((entry) => entry.issuer === claims.iss);
    if (candidates.length === 0) throw new Refused('no configured issuer has this iss');
    const [first] = candidates;
    const keySet = this.keySets.get(`${first!.issuer}\n${first!.jwks_url ?? ''}`)!;
    // Entries of one issuer with another jwks_url are tried with their own key set below, only when this one fails.
    const { payload } = await verifyWith(token, keySet, first!).catch(async (err: unknown) => {
      const other = candidates.find((entry) => (entry.jwks_url ?? '') !== (first!.jwks_url ?? ''));
      if (!other) throw err;
      return verifyWith(token, this.keySets.get(`${other.issuer}\n${other.jwks_url ?? ''}`)!, other);
    });
    const audiences = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    const subject = payload.sub!;
    // The subject is recorded (audit, runs): a NUL, which PostgreSQL's text cannot hold, is no subject anyone configured.
    if (subject.includes('\u0000')) throw new Refused('sub holds a NUL character');
    const fits = candidates.filter((entry) => [entry.audience].flat().some((audience) => audiences.includes(audience)));
    if (fits.length === 0) throw new Refused('aud names none of the audiences configured for this issuer');
    const entry = fits.find((candidate) => subjectMatches(subject, candidate.subjects));
    if (!entry) throw new Refused(`subject ${subject} is not in the subjects of issuer ${fits.map((fit) => fit.name).join(', ')}`);
    return {
      issuer: entry.name,
      subject,
      scope: entry.toolkits.length === 0 ? null : new Set(entry.toolkits),
      user: entry.user,
      issuedAt: typeof payload.iat === 'number' ? payload.iat * 1000 : null,
      expiresAt: payload.exp! * 1000,
      credential: { kind: 'jwt', id: tokenHash.slice(0, 8) },
    };
  }
}

/** Signature, iss, exp and nbf (with leeway); aud and sub are matched against the entries afterwards. */
function verifyWith(token: string, keySet: KeySet, entry: JwtIssuerConfig) {
  return jwtVerify(token, keySet.key, {
    issuer: entry.issuer,
    algorithms: JWT_ALGORITHMS,
    clockTolerance: LEEWAY_S,
    requiredClaims: ['exp', 'sub', 'aud'],
  });
}

const hashOf = (token: string): string => hash('sha256', token, 'hex');

function reasonOf(err: unknown): string {
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature verification failed';
  if (err instanceof errors.JWKSNoMatchingKey) return 'no key of the issuer has this kid';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'alg not allowed (RS256, ES256 and EdDSA only)';
  return (err as Error).message;
}

/** What of a refused token helps ops (iss, sub, aud: who tried), never the token itself. */
function claimsForLog(token: string): Record<string, unknown> {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return {};
  }
  const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);
  return { iss: text(claims.iss), sub: text(claims.sub), aud: Array.isArray(claims.aud) ? claims.aud.slice(0, 5).map(text) : text(claims.aud) };
}
