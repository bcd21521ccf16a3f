import { watch, type FSWatcher } from 'chokidar';
import path from 'node:path';
import type { Logger } from '../log.js';
import { TOOLKIT_EXTENSIONS } from './compile-toolkit.js';
import type { ToolkitRegistry } from './toolkit-registry.js';

/** Quiet time after the last file event before reloading: a `git pull` of many files becomes one reload. */
const SETTLE_MS = 100;

/**
 * Watches the toolkit directory and reloads the registry when a toolkit file is added, changed,
 * renamed or deleted. awaitWriteFinish waits until a file stops growing, so a half-written file is
 * rarely read; if it is, it fails validation and the last good version stays live until the next event.
 */
export function watchToolkits(dir: string, registry: ToolkitRegistry, log: Logger): { close(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      registry.reload().catch((err) => log.error('toolkit reload failed', { err }));
    }, SETTLE_MS);
  };
  const watcher: FSWatcher = watch(dir, {
    ignoreInitial: true,
    depth: 0,
    atomic: true,
    awaitWriteFinish: { stabilityThreshold: 120, pollInterval: 40 },
    ignored: (file, stats) => Boolean(stats?.isFile()) && !TOOLKIT_EXTENSIONS.includes(path.extname(file)),
  });
  watcher.on('all', schedule);
  watcher.on('error', (err) => log.error('toolkit watcher failed', { err }));
  return {
    close: async () => {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
