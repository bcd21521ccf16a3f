import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (tests are compiled to build/test/support). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const tkgateBin = path.join(repoRoot, 'packages/cli/dist/main.js');

export function tempDir(prefix = 'tkgate-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}
