// mocha's spec reporter, plus each failure's title and first line appended to the file named by
// TKGATE_TEST_RECAP: `npm test` runs two mocha passes and prints the recap after the second, so a log read from its
// end (a CI page keeps the tail) still names every failure of the first pass.
'use strict';
// mocha loads a reporter with require(), so this one is CommonJS.
/* eslint-disable @typescript-eslint/no-require-imports */
const { appendFileSync } = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

class SpecWithRecap extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    // One file after another (npm test's serial pass), a file's wall time is seen here as it passes; in the parallel
    // pass scripts/file-durations.cjs measures it in the worker instead.
    const durations = process.env.TKGATE_TEST_FILE_TIMES;
    if (durations) {
      const started = new Map();
      runner.on('suite', (suite) => {
        if (suite.file && !started.has(suite.file)) started.set(suite.file, Date.now());
      });
      runner.on('suite end', (suite) => {
        if (suite.file && suite.parent?.root)
          appendFileSync(durations, `${Date.now() - started.get(suite.file)}\t${path.relative(process.cwd(), suite.file)}\n`);
      });
    }
    const recap = process.env.TKGATE_TEST_RECAP;
    if (!recap) return;
    runner.on('fail', (test, err) => {
      const title = typeof test.fullTitle === 'function' ? test.fullTitle() : String(test.title);
      const file = test.file ? ` (${test.file})` : '';
      const message = String(err?.message ?? err)
        .split('\n')
        .slice(0, 6)
        .join('\n    ');
      appendFileSync(recap, `- ${title}${file}\n    ${message}\n`);
    });
  }
}

module.exports = SpecWithRecap;
