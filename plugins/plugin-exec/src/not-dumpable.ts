import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@tkgate/core';

let tried = false;

const addon = fileURLToPath(new URL('../native/build/tkgate-not-dumpable.node', import.meta.url));

/**
 * Makes the gateway's process not dumpable (Linux, prctl PR_SET_DUMPABLE 0, through the small Node-API module
 * native/not-dumpable.c). Commands run as the gateway's user, and any process of that user may otherwise read
 * /proc/<gateway pid>/environ (the variables the configuration did not read, which `tkgate start` cannot
 * withdraw: a cloud SDK's keys, a plugin's own settings) and its memory. Not dumpable, those files belong to
 * root. The configuration's own variables were withdrawn before (`tkgate start`), which needs /proc/self/mem
 * still writable: plugins are registered after it. `tkgate start` calls this too, for the primary of
 * server.workers, which registers no plugin.
 */
export function makeGatewayNotDumpable(log: Logger): void {
  // The flag is the process's: once set (or found impossible and said so), there is nothing more to do.
  if (process.platform !== 'linux' || tried) return;
  tried = true;
  if (!existsSync(addon)) {
    log.warn('the gateway process stays dumpable: commands of exec endpoints can read its environment in /proc (the not-dumpable module was not built)', {
      module: addon,
    });
    return;
  }
  try {
    createRequire(import.meta.url)(addon);
  } catch (err) {
    log.warn('the gateway process stays dumpable: commands of exec endpoints can read its environment in /proc', { module: addon, err });
  }
}
