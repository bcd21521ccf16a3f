import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '../support/paths.js';

describe('the repository holds no profiler output', () => {
  it('no V8 log or CPU profile is tracked, and .gitignore keeps them out', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\n');
    expect(tracked.filter((file) => /(^|\/)isolate-.*\.log$|\.cpuprofile$|\.heapprofile$/.test(file))).to.deep.equal([]);
    const ignored = readFileSync(path.join(repoRoot, '.gitignore'), 'utf8').split('\n');
    expect(ignored).to.include.members(['isolate-*.log', '*.cpuprofile']);
  });
});
