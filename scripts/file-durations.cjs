// A root-hook plugin for `npm test`: each test file's wall time, hooks included, appended to the file named by
// TKGATE_TEST_DURATIONS, so scripts/run-tests.js can name the slowest files at the end. CI has a time budget, and in
// mocha's parallel mode the reporter only sees a file's events once it has ended, so the times are taken here, in
// the worker that runs the file (root hooks run once per file there).
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports */
const { appendFileSync } = require('node:fs');
const path = require('node:path');

let startedAt = 0;

exports.mochaHooks = {
  beforeAll() {
    startedAt = Date.now();
  },
  afterAll() {
    const target = process.env.TKGATE_TEST_DURATIONS;
    const file = this.test?.parent?.suites?.[0]?.file;
    if (!target || !file) return;
    appendFileSync(target, `${Date.now() - startedAt}\t${path.relative(process.cwd(), file)}\n`);
  },
};
