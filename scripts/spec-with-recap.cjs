// mocha's spec reporter, plus each failure's title and first line appended to the file named by
// TKGATE_TEST_RECAP: `npm test` runs two mocha passes and prints the recap after the second, so a log read from its
// end (a CI page keeps the tail) still names every failure of the first pass.
'use strict';
// mocha loads a reporter with require(), so this one is CommonJS.
/* eslint-disable @typescript-eslint/no-require-imports */
const { appendFileSync } = require('node:fs');
const Mocha = require('mocha');

class SpecWithRecap extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
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
