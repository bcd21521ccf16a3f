import { JsonMembers, type LogFields, type Logger } from '../log.js';
import type { SecretMask } from './secret-mask.js';

/** An error as data whose strings can be masked (its message and stack may quote what a command printed). */
function plainError(err: unknown, mask: SecretMask, depth = 0): unknown {
  if (!(err instanceof Error) || depth > 8) return mask.maskData(err);
  const plain: Record<string, unknown> = { name: err.name, message: mask.mask(err.message) };
  if (err.stack) plain.stack = mask.mask(err.stack);
  if (err.cause !== undefined) plain.cause = plainError(err.cause, mask, depth + 1);
  return plain;
}

function maskedFields(fields: LogFields | JsonMembers | undefined, mask: SecretMask): LogFields | JsonMembers | undefined {
  if (fields === undefined) return undefined;
  if (fields instanceof JsonMembers) return new JsonMembers(mask.mask(fields.text));
  const masked: LogFields = {};
  for (const [key, value] of Object.entries(fields)) masked[key] = value instanceof Error ? plainError(value, mask) : mask.maskData(value);
  return masked;
}

/**
 * A logger whose lines never hold a secret value the gateway handed out (any level): free while no toolkit
 * uses a secret, then each line's text is searched for the values. What a command or an upstream says may
 * quote a credential it was given; this is the net under the places that mask on purpose.
 */
export function maskedLogger(log: Logger, mask: SecretMask): Logger {
  const at =
    (emit: Logger['info']) =>
    (msg: string, fields?: LogFields | JsonMembers): void => {
      if (mask.empty) emit(msg, fields);
      else emit(mask.mask(msg), maskedFields(fields, mask));
    };
  return { error: at(log.error), warn: at(log.warn), info: at(log.info), debug: at(log.debug) };
}
