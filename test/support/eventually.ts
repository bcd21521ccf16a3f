import { sleep } from './fixtures.js';

/**
 * Waits until `check` holds, polling; fails after a deadline generous enough for a loaded machine. Tests
 * assert the outcome, never how long it took.
 */
export async function eventually(what: string, check: () => Promise<boolean>, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${deadlineMs} ms`);
}
