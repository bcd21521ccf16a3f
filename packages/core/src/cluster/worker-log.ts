import type { LogFields, Logger } from '../log.js';

/** Every line of a cluster worker names it. */
export function tagged(log: Logger, fields: LogFields): Logger {
  return {
    error: (msg, more) => log.error(msg, { ...fields, ...more }),
    warn: (msg, more) => log.warn(msg, { ...fields, ...more }),
    info: (msg, more) => log.info(msg, { ...fields, ...more }),
    debug: (msg, more) => log.debug(msg, { ...fields, ...more }),
  };
}

/**
 * Every worker watches the toolkit files and reloads on its own; only the first one reports it, so a
 * change is logged once. The others' lines stay available at debug.
 */
export function demoted(log: Logger): Logger {
  return { error: log.debug, warn: log.debug, info: log.debug, debug: log.debug };
}
