import { z } from 'zod';
import { parseDuration } from '../config/duration.js';

/**
 * Schemas plugins share with core so toolkit files read the same everywhere: a duration is written as
 * in the server configuration ("500ms", "45s", "30m", "2h", "90d" or seconds) and comes out in milliseconds.
 */
export const durationMs = z
  .union([z.string(), z.number()])
  .transform((value, ctx) => {
    try {
      return parseDuration(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  })
  // What editors see (`tkgate schema`): the forms parseDuration accepts.
  .meta({
    anyOf: [
      { type: 'string', pattern: '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h|d)?\\s*$' },
      { type: 'number', minimum: 0 },
    ],
  });
