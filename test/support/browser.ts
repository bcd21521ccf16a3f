import { existsSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';
import { tempDir } from './paths.js';

/** Debian's chromium (`apt-get install chromium chromium-driver`; .ci/run installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium with a fresh profile, driven by playwright-core. Undefined when it is not installed,
 * outside CI only: with CI=true a missing browser fails the run.
 */
export async function launchBrowser(): Promise<BrowserContext | undefined> {
  if (!existsSync(CHROMIUM)) {
    if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: CI must install chromium (see .ci/run)`);
    console.warn(`    (browser tests skipped: ${CHROMIUM} is not installed; apt-get install chromium chromium-driver)`);
    return undefined;
  }
  return chromium.launchPersistentContext(tempDir('tkgate-chromium-'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
