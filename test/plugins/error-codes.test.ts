import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { CORE_ERROR_CODES } from '@tkgate/core';
import { repoRoot } from '../support/paths.js';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describe('the error family', () => {
  it('declares every code core throws, with the status it is thrown with', () => {
    const declared = CORE_ERROR_CODES as Record<string, { status: number }>;
    const used: string[] = [];
    for (const file of sourceFiles(path.join(repoRoot, 'packages/core/src'))) {
      const text = readFileSync(file, 'utf8');
      for (const [, status, code] of text.matchAll(/new GatewayError\((\d{3}), '([a-z0-9_]+)'/g)) {
        expect(declared[code!], `${code} in ${path.basename(file)}`).to.not.equal(undefined);
        expect(declared[code!]!.status, `${code} in ${path.basename(file)}`).to.equal(Number(status));
        used.push(code!);
      }
      for (const [, code] of text.matchAll(/(?:notFound|coreError)\('([a-z0-9_]+)'/g)) {
        expect(declared, `${code} in ${path.basename(file)}`).to.have.property(code!);
        used.push(code!);
      }
    }
    expect(used).to.include.members(['busy', 'user_exists', 'toolkit_not_found', 'db_context_failed']);
    for (const [code, { status }] of Object.entries(declared)) expect(status, code).to.be.within(400, 599);
  });

  it('has docs/errors.md generated from the declarations', () => {
    const result = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/error-docs.js'), '--check'], { cwd: repoRoot, encoding: 'utf8' });
    expect(result.status, result.stderr).to.equal(0);
  });
});
