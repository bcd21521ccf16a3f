import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@tkgate/core';
import type { LaunchHelper } from './helper-link.js';
import { launchNativeHelper } from './native-link.js';
import { launchNodeHelper } from './node-link.js';

export type SpawnerChoice = 'auto' | 'native' | 'node';

/**
 * The native helper, built at install time (native/build.js). TKGATE_EXEC_NATIVE_HELPER names another
 * file: for packagers who build it elsewhere, and for tests of the fallback.
 */
export function nativeHelperPath(): string {
  return process.env.TKGATE_EXEC_NATIVE_HELPER || fileURLToPath(new URL('../native/build/tkgate-spawn-helper', import.meta.url));
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Which spawn helpers the pool starts. "native" (the C helper) must exist, or the boot is refused; "auto"
 * uses it when it was built and falls back to the Node helpers, saying so once in the log, when it is
 * missing or when one dies before it has said hello (it cannot run on this machine).
 */
export function chooseLauncher(choice: SpawnerChoice, log: Logger): LaunchHelper {
  const binary = nativeHelperPath();
  if (choice === 'node') return (events) => launchNodeHelper(events, log);
  if (choice === 'native' && !executable(binary)) {
    throw new Error(
      `spawner "native": ${binary} is missing or not executable (reinstall @tkgate/plugin-exec where a C compiler is available, or use spawner "auto")`,
    );
  }
  let native: boolean | undefined = choice === 'native' ? true : undefined;
  return (events) => {
    if (native === undefined) {
      native = executable(binary);
      if (!native) log.warn('exec native spawn helper not built; using the Node spawn helpers', { binary });
    }
    if (!native) return launchNodeHelper(events, log);
    let greeted = false;
    return launchNativeHelper(
      binary,
      {
        reply: (reply) => {
          if (reply.type === 'hello') greeted = true;
          events.reply(reply);
        },
        gone: () => {
          if (!greeted && choice === 'auto' && native) {
            native = false;
            log.error('exec native spawn helper did not start; using the Node spawn helpers', { binary });
          }
          events.gone();
        },
      },
      log,
    );
  };
}
