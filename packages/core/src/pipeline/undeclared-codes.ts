import { asGatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RegisteredType } from '../plugins/endpoint-types.js';

/** A code no one declared still reaches the client; the log says so once per plugin and code. */
export function undeclaredCodeNotes(log: Logger): (type: RegisteredType, thrown: unknown) => void {
  const noted = new Set<string>();
  return (type, thrown) => {
    const error = asGatewayError(thrown);
    const key = `${type.plugin}\0${error?.code}`;
    if (!error || type.knowsErrorCode(error.code) || noted.has(key)) return;
    noted.add(key);
    log.warn('undeclared error code', { plugin: type.plugin, code: error.code, status: error.status, hint: 'declare it with api.declareErrors' });
  };
}
