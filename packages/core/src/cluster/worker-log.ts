import type { Logger } from '../log.js';

/**
 * Every worker watches the toolkit files and reloads on its own; only the first one reports it, so a
 * change is logged once. The others' lines stay available at debug.
 */
export function demoted(log: Logger): Logger {
  return { error: log.debug, warn: log.debug, info: log.debug, debug: log.debug };
}
