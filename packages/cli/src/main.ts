#!/usr/bin/env node
import { run } from './run.js';

// Exit when the command is done: plugins' onClose hooks have run by then, and a handle some plugin
// leaked anyway must not keep a finished command (config check in CI, a failed start) alive.
// stdout and stderr are synchronous for files and pipes, so nothing written is lost.
process.exit(await run(process.argv.slice(2)));
