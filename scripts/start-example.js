// `npm start [-- --config FILE]`: creates the example toolkit's table in the configured database, then
// serves. Both steps get the same arguments, so `npm start -- --config maria.json` works on MariaDB too.
import { run } from '../packages/cli/dist/run.js';

const args = process.argv.slice(2);
const setup = await run(['example', 'setup', ...args.filter((arg, i) => arg === '--config' || arg.startsWith('--config=') || args[i - 1] === '--config')]);
process.exitCode = setup === 0 ? await run(['start', ...args]) : setup;
