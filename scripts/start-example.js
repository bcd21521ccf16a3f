// `npm start [-- --config FILE]`: creates the example toolkit's table in the configured database, then
// serves. Both steps get the same arguments, so `npm start -- --config maria.json` works on MariaDB too.
// Both run in this process, and package.json's `start` execs it: npm passes SIGTERM and SIGINT to its
// script's process, which must be the gateway itself (a shell between them died and left it running).
import { run } from '../packages/cli/dist/run.js';

const args = process.argv.slice(2);
const setup = await run(['example', 'setup', ...args.filter((arg, i) => arg === '--config' || arg.startsWith('--config=') || args[i - 1] === '--config')]);
process.exitCode = setup === 0 ? await run(['start', ...args]) : setup;
