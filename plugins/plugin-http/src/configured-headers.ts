import { isSecretReference, type SecretReference } from '@tkgate/core';
import type { HttpConfig } from './http-config.js';

/** A secret reference's current value (the plugin API's secrets.value): a changed secret file is used at once. */
export type SecretValue = (reference: SecretReference) => string;

/** `upstream.headers` as sent on one call: each secret reference read now. */
export function configuredHeaders(headers: HttpConfig['upstream']['headers'], secretValue: SecretValue): Record<string, string> {
  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) sent[name] = isSecretReference(value) ? secretValue(value) : value;
  return sent;
}
