// The CLI package ships the toolkit files' JSON Schema of the built-in types at a stable path
// (@tkgate/cli/schema/toolkit.schema.json, docs/toolkits.md). The one committed copy is config/toolkit.schema.json
// (`tkgate schema`, checked by test/toolkits/json-schema.test.ts); the CLI's is made from it when the package is
// packed: by stage.js and pack-packages.js (which pack with --ignore-scripts), and by the package's prepack.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export function placeCliSchema() {
  const target = path.join(root, 'packages/cli/schema/toolkit.schema.json');
  mkdirSync(path.dirname(target), { recursive: true });
  copyFileSync(path.join(root, 'config/toolkit.schema.json'), target);
  return target;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) placeCliSchema();
