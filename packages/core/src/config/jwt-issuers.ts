import { z } from 'zod';
import { uniqueNames } from './unique-names.js';

/**
 * One entry of `auth.jwt_issuers`: a platform whose signed tokens (a CI system's OIDC token, a Kubernetes
 * service-account token) let a machine act as a tkgate user without a stored key. Several entries may name one
 * issuer (one per repository or namespace, acting as different users); a token takes the first that fits it.
 */
const ISSUER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const TOOLKIT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const httpUrl = z.string().refine((value) => URL.canParse(value) && ['https:', 'http:'].includes(new URL(value).protocol), {
  message: 'must be an absolute http or https URL',
});

export const jwtIssuerSchema = z.strictObject({
  name: z.string().regex(ISSUER_NAME, 'must be 1-32 of lowercase letters, digits, _ and - (starting with a letter or digit)'),
  issuer: z.string().min(1, 'must be the exact `iss` of the tokens'),
  jwks_url: httpUrl.optional(),
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  subjects: z
    .array(
      z
        .string()
        .min(1)
        .refine((subject) => !subject.slice(0, -1).includes('*'), { message: 'may hold * only at its end' }),
    )
    .min(1, 'must list at least one subject (exact, or ending in *)'),
  user: z.string().min(1),
  toolkits: z.array(z.string().regex(TOOLKIT_NAME, 'must be a toolkit name')).default([]),
});

export type JwtIssuerConfig = z.output<typeof jwtIssuerSchema>;

export const jwtIssuerList = z.array(jwtIssuerSchema).superRefine(uniqueNames('issuer'));
