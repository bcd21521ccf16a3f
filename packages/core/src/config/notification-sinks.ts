import { z } from 'zod';
import { secretReference } from '../secrets/secret-reference.js';
import { parseDuration } from './duration.js';
import { uniqueNames } from './unique-names.js';

/**
 * One entry of `notifications.sinks` (docs/notifications.md): where run events are delivered. `standard-webhooks`
 * signs each request with `secret` (`whsec_` and base64, as the Standard Webhooks specification writes keys);
 * `slack` posts an incoming-webhook body (its URL is its secret, so it may be a secret reference too).
 */
const SINK_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Header names as RFC 9110 spells tokens; values without control characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const hasControl = (value: string): boolean => [...value].some((char) => (char < ' ' && char !== '\t') || char === '\x7f');

const httpUrl = z.string().refine((value) => URL.canParse(value) && ['https:', 'http:'].includes(new URL(value).protocol), {
  message: 'must be an absolute http or https URL',
});

const timeout = z.union([z.string(), z.number()]).transform((value, ctx) => {
  try {
    const ms = parseDuration(value);
    if (ms >= 100 && ms <= 120_000) return ms;
    ctx.addIssue({ code: 'custom', message: 'must be between 100ms and 2m' });
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
  return z.NEVER;
});

export const notificationSinkSchema = z
  .strictObject({
    name: z.string().regex(SINK_NAME, 'must be 1-64 of lowercase letters, digits, _ and - (starting with a letter or digit)'),
    url: z.union([httpUrl, secretReference]),
    format: z.enum(['standard-webhooks', 'slack']),
    secret: secretReference.optional(),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, 'must be a header name'),
        z.union([z.string().refine((value) => !hasControl(value), 'must hold no control characters'), secretReference]),
      )
      .default({}),
    timeout: timeout.default(10_000),
  })
  .superRefine((sink, ctx) => {
    if (sink.format === 'standard-webhooks' && !sink.secret)
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message: 'a standard-webhooks sink needs its signing secret, e.g. { secret: "env:OPS_WEBHOOK_SECRET" }',
      });
  });

export type NotificationSinkConfig = z.output<typeof notificationSinkSchema>;

export const notificationSinkList = z.array(notificationSinkSchema).superRefine(uniqueNames('sink'));
