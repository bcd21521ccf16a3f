import { sleep } from './fixtures.js';

/**
 * Waits until `check` gives a value (anything but undefined or false) and returns it, polling; fails after a
 * deadline generous enough for a loaded machine. Tests assert the outcome, never how long it took.
 */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, deadlineMs = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > deadlineMs) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await sleep(50);
  }
}
