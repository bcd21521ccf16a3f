// The tkgate binary must be executable in a checkout (node_modules/.bin/tkgate, npx tkgate); tsc writes it 0644.
import { chmodSync } from 'node:fs';

chmodSync(new URL('../packages/cli/dist/main.js', import.meta.url), 0o755);
