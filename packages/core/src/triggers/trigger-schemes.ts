import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';

/** What a scheme's check needs beyond the request: the hmac scheme's options, and the clock. */
export interface VerifyOptions {
  hmac?: { header: string; algorithm: 'sha256' | 'sha512'; encoding: 'hex' | 'base64'; prefix: string };
  nowMs: number;
}

/** One way a provider signs its requests: the check on the raw body (undefined: verified, else why not) and the delivery id. */
export interface TriggerScheme {
  verify(secret: string, raw: Buffer, headers: IncomingHttpHeaders, options: VerifyOptions): Promise<string | undefined> | string | undefined;
  /** The provider's id of this delivery, the same on every redelivery (none: slack, hmac). */
  delivery(headers: IncomingHttpHeaders, body: unknown): string | undefined;
}

/** Timestamped schemes refuse a timestamp this far from the gateway's clock, either way (as Slack and Stripe advise). */
export const TIMESTAMP_TOLERANCE_S = 300;

/** One header's value (a repeated header's first). */
const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Two byte strings compared in constant time: their SHA-256 digests, of equal length whatever the inputs' lengths. */
export function sameBytes(a: Buffer | string, b: Buffer | string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

const hmac = (algorithm: string, secret: string, ...parts: Array<string | Buffer>): Buffer => {
  const mac = createHmac(algorithm, secret);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** A Unix timestamp in seconds within the tolerance of now, else why not. */
function timestampProblem(text: string | undefined, nowMs: number): string | undefined {
  if (text === undefined || !/^\d{1,12}$/.test(text)) return 'no timestamp, or not a number of seconds';
  if (Math.abs(nowMs / 1000 - Number(text)) > TIMESTAMP_TOLERANCE_S) return `timestamp ${text} is more than ${TIMESTAMP_TOLERANCE_S} s away from now`;
  return undefined;
}

const noDelivery = (): undefined => undefined;
const deliveryHeader =
  (name: string) =>
  (headers: IncomingHttpHeaders): string | undefined =>
    header(headers, name) || undefined;

/**
 * The schemes, by the name `trigger.verify` gives (docs/triggers.md says how each provider is set up). GitHub's
 * check is its own library's; Standard Webhooks' is the specification's reference library; the others are an HMAC
 * or a token compared with crypto.timingSafeEqual, as their providers document.
 */
export const SCHEMES = {
  github: {
    async verify(secret, raw, headers) {
      const signature = header(headers, 'x-hub-signature-256');
      if (!signature) return 'no X-Hub-Signature-256 header';
      if (raw.length === 0) return 'an empty body';
      return (await verifyGithub(secret, raw.toString('utf8'), signature)) ? undefined : 'X-Hub-Signature-256 does not match the body';
    },
    delivery: deliveryHeader('x-github-delivery'),
  },
  gitlab: {
    verify(secret, _raw, headers) {
      const token = header(headers, 'x-gitlab-token');
      if (token === undefined) return 'no X-Gitlab-Token header';
      return sameBytes(token, secret) ? undefined : 'X-Gitlab-Token is not the secret';
    },
    delivery: deliveryHeader('x-gitlab-event-uuid'),
  },
  slack: {
    verify(secret, raw, headers, { nowMs }) {
      const signature = header(headers, 'x-slack-signature');
      if (!signature) return 'no X-Slack-Signature header';
      const timestamp = header(headers, 'x-slack-request-timestamp');
      const stale = timestampProblem(timestamp, nowMs);
      if (stale) return `X-Slack-Request-Timestamp: ${stale}`;
      const expected = `v0=${hmac('sha256', secret, `v0:${timestamp}:`, raw).toString('hex')}`;
      return sameBytes(signature, expected) ? undefined : 'X-Slack-Signature does not match the body';
    },
    delivery: noDelivery,
  },
  stripe: {
    verify(secret, raw, headers, { nowMs }) {
      const signature = header(headers, 'stripe-signature');
      if (!signature) return 'no Stripe-Signature header';
      const pairs = signature.split(',').map((pair) => pair.trim().split('=', 2) as [string, string | undefined]);
      const timestamp = pairs.find(([key]) => key === 't')?.[1];
      const stale = timestampProblem(timestamp, nowMs);
      if (stale) return `Stripe-Signature: ${stale}`;
      const expected = hmac('sha256', secret, `${timestamp}.`, raw).toString('hex');
      // Stripe sends a v1 per active secret during a rotation: any may match. Every one is compared.
      let matched = false;
      for (const [key, value] of pairs) if (key === 'v1' && value !== undefined && sameBytes(value, expected)) matched = true;
      return matched ? undefined : 'no v1 signature of Stripe-Signature matches the body';
    },
    delivery: (_headers, body) => {
      const id = body !== null && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
      return typeof id === 'string' && id.length > 0 ? id : undefined;
    },
  },
  'standard-webhooks': {
    verify(secret, raw, headers) {
      const id = header(headers, 'webhook-id');
      const timestamp = header(headers, 'webhook-timestamp');
      const signature = header(headers, 'webhook-signature');
      if (!id || !timestamp || !signature) return 'no webhook-id, webhook-timestamp or webhook-signature header';
      try {
        // The library refuses a timestamp more than 5 minutes away, as the specification says.
        new Webhook(secret).verify(raw, { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, { jsonParse: false });
        return undefined;
      } catch (err) {
        return `standard-webhooks: ${(err as Error).message}`;
      }
    },
    delivery: deliveryHeader('webhook-id'),
  },
  hmac: {
    verify(secret, raw, headers, { hmac: options }) {
      const { header: name, algorithm, encoding, prefix } = options!;
      const value = header(headers, name.toLowerCase());
      if (value === undefined) return `no ${name} header`;
      if (!value.startsWith(prefix)) return `${name} does not start with ${JSON.stringify(prefix)}`;
      const given = Buffer.from(value.slice(prefix.length), encoding);
      return sameBytes(given, hmac(algorithm, secret, raw)) ? undefined : `${name} does not match the body`;
    },
    delivery: noDelivery,
  },
} satisfies Record<string, TriggerScheme>;

export type SchemeName = keyof typeof SCHEMES;
export const SCHEME_NAMES = Object.keys(SCHEMES) as [SchemeName, ...SchemeName[]];
