#!/usr/bin/env node
// The tkgate command. It lives in the source tree, not in dist/, so that `npm ci` in a fresh checkout links
// node_modules/.bin/tkgate (npm skips a bin whose file the build has not written yet) and `npx tkgate` works.
import '../dist/main.js';
