import { isSecretReference, type ConfigIssue, type SecretReference } from '@tkgate/core';

/** Header names that carry credentials: Authorization, and any naming a key, a token, a secret or a password. */
const CREDENTIAL_HEADER = /^(?:proxy-)?authorization$|key|token|secret|password/i;

/**
 * `tkgate config check`'s advice: a credential written into the toolkit file reaches whoever reads the file (and
 * its history in git). A warning, never a refusal; it names the header, never its value.
 */
export function literalCredentials(headers: Record<string, string | SecretReference>): ConfigIssue[] {
  return Object.entries(headers)
    .filter(([name, value]) => !isSecretReference(value) && value !== '' && CREDENTIAL_HEADER.test(name))
    .map(([name]) => ({
      path: ['upstream', 'headers', name],
      message: `header ${name} holds a credential written into the toolkit file; keep it outside: { secret: "env:NAME" } or { secret: "file:PATH" }`,
    }));
}
