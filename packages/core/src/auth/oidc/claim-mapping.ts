import type { OidcProviderConfig } from '../../config/oidc-providers.js';

export type Claims = Record<string, unknown>;

/** What the claims of one sign-in say about the user, by the provider's rules. */
export interface MappedClaims {
  username: string | undefined;
  power: number;
  /** The core group the claims map to; null: none. */
  coreGroup: string | null;
}

/** A claim's values: a string, number or boolean alone, or the members of an array, in order. */
function valuesOf(claim: unknown): unknown[] {
  return Array.isArray(claim) ? claim : claim === undefined || claim === null ? [] : [claim];
}

/** `username_claim`, else `preferred_username`, then `email`: the first that is a non-empty string. */
function usernameOf(claims: Claims, config: OidcProviderConfig): string | undefined {
  const names = config.username_claim ? [config.username_claim] : ['preferred_username', 'email'];
  for (const name of names) {
    const value = claims[name];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** The highest power of the matching rules, else the default (docs/sso.md, "Users and claims"). */
function powerOf(claims: Claims, config: OidcProviderConfig): number {
  let power: number | undefined;
  for (const rule of config.power.rules) {
    const claim = claims[rule.claim];
    const matches =
      rule.equals !== undefined
        ? claim === rule.equals
        : valuesOf(claim).includes(rule.contains) ||
          (typeof claim === 'string' && typeof rule.contains === 'string' && claim.split(' ').includes(rule.contains));
    if (matches && (power === undefined || rule.power > power)) power = rule.power;
  }
  return power ?? config.power.default;
}

/** The first value of the claim (in its order) that the map names. */
function coreGroupOf(claims: Claims, config: OidcProviderConfig): string | null {
  if (!config.core_group) return null;
  const { claim, map } = config.core_group;
  for (const value of valuesOf(claims[claim])) {
    if (typeof value === 'string' && Object.hasOwn(map, value)) return map[value]!;
  }
  return null;
}

export function mapClaims(claims: Claims, config: OidcProviderConfig): MappedClaims {
  return { username: usernameOf(claims, config), power: powerOf(claims, config), coreGroup: coreGroupOf(claims, config) };
}
