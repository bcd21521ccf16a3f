import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (tests are compiled to build/test/support). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * The `tkgate` that process-level tests run: this checkout's, or another build's named by TKGATE_TEST_BIN (an
 * older checkout's packages/cli/dist/main.js, to watch a test fail there; see migrateTestDatabase).
 */
export const tkgateBin = process.env.TKGATE_TEST_BIN ? path.resolve(process.env.TKGATE_TEST_BIN) : path.join(repoRoot, 'packages/cli/dist/main.js');

export function tempDir(prefix = 'tkgate-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}
