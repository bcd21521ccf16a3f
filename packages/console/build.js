// Builds the console into dist/public: one bundled, minified script and one stylesheet, each named by its
// content hash (served immutable), and index.html naming them (served uncached). Run by `npm ci` (the root
// prepare script) and `npm run build`; about a second.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, 'dist/public');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: { app: path.join(here, 'src/main.ts'), style: path.join(here, 'src/style.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  entryNames: '[name]-[hash]',
  outdir: out,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const script = outputs.find((file) => file.startsWith('app-') && file.endsWith('.js'));
const style = outputs.find((file) => file.startsWith('style-') && file.endsWith('.css'));
writeFileSync(
  path.join(out, 'index.html'),
  readFileSync(path.join(here, 'src/index.html'), 'utf8').replace('./SCRIPT', `./${script}`).replace('./STYLE', `./${style}`),
);
