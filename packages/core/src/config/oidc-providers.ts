import { z } from 'zod';
import { uniqueNames } from './unique-names.js';

/**
 * One entry of `auth.oidc.providers` (docs/sso.md, "Configuration"), checked once at load. The client secret may come
 * from the environment (TKGATE_OIDC_<NAME>_CLIENT_SECRET) instead of the file: `withClientSecrets`.
 */
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

const absoluteUrl = (schemes: string[]) =>
  z.string().refine((value) => URL.canParse(value) && schemes.includes(new URL(value).protocol), {
    message: `must be an absolute ${schemes.map((scheme) => scheme.slice(0, -1)).join(' or ')} URL`,
  });

/** A return_to entry: an origin and a path prefix, no query, fragment or user info. */
const returnToPrefix = absoluteUrl(['https:', 'http:']).refine(
  (value) => {
    const url = new URL(value);
    return url.search === '' && url.hash === '' && url.username === '' && url.password === '' && !value.includes('?') && !value.includes('#');
  },
  { message: 'must be an origin and a path prefix, without query, fragment or user info' },
);

const powerRule = z
  .strictObject({
    claim: z.string().min(1),
    equals: z.union([z.string(), z.number(), z.boolean()]).optional(),
    contains: z.union([z.string(), z.number()]).optional(),
    power: z.number().int(),
  })
  .refine((rule) => (rule.equals === undefined) !== (rule.contains === undefined), { message: 'needs exactly one of equals or contains' });

export const oidcProviderSchema = z.strictObject({
  name: z.string().regex(PROVIDER_NAME, 'must be 1-32 of lowercase letters, digits, _ and - (starting with a letter or digit)'),
  issuer: absoluteUrl(['https:', 'http:']),
  client_id: z.string().min(1),
  client_secret: z.string().min(1).optional(),
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be a scope token')).default(['openid', 'profile', 'email']),
  username_claim: z.string().min(1).optional(),
  return_to: z.array(returnToPrefix).min(1, 'must list at least one allowed URL prefix'),
  create_users: z.boolean().default(true),
  power: z.strictObject({ default: z.number().int().default(0), rules: z.array(powerRule).default([]) }).default({ default: 0, rules: [] }),
  core_group: z.strictObject({ claim: z.string().min(1), map: z.record(z.string(), z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)) }).optional(),
  redirect_uri: absoluteUrl(['https:', 'http:']).optional(),
  post_logout_redirect_uri: absoluteUrl(['https:', 'http:']).optional(),
  token_endpoint_auth_method: z.enum(['client_secret_basic', 'client_secret_post']).default('client_secret_basic'),
});

export type OidcProviderConfig = z.output<typeof oidcProviderSchema>;

export const oidcProviderList = z.array(oidcProviderSchema).superRefine(uniqueNames('provider'));

/** The environment variable that may hold a provider's client secret. */
export const clientSecretVariable = (name: string): string => `TKGATE_OIDC_${name.toUpperCase().replace(/-/g, '_')}_CLIENT_SECRET`;

/** Each provider with its client secret (the environment wins over the file); problems name the key and the variable. */
export function withClientSecrets(providers: readonly OidcProviderConfig[], env: NodeJS.ProcessEnv): { providers: OidcProviderConfig[]; problems: string[] } {
  const problems: string[] = [];
  const resolved = providers.map((provider, index) => {
    const secret = env[clientSecretVariable(provider.name)] || provider.client_secret;
    if (!secret) problems.push(`auth.oidc.providers.${index}.client_secret: must be set, or the environment variable ${clientSecretVariable(provider.name)}`);
    return { ...provider, client_secret: secret };
  });
  return { providers: resolved, problems };
}
