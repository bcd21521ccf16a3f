#!/usr/bin/env node
// Builds the native spawn helper (spawn-helper.c) at install time: `npm ci` runs this as the package's
// install script. Without a C compiler the build fails softly: the plugin then uses its Node spawn helpers
// (spawner "auto") and says so once in the gateway's log. CC picks the compiler (default cc).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('./spawn-helper.c', import.meta.url));
const outDir = fileURLToPath(new URL('./build/', import.meta.url));
const binary = `${outDir}tkgate-spawn-helper`;
const compiler = process.env.CC || 'cc';
const addonSource = fileURLToPath(new URL('./not-dumpable.c', import.meta.url));
const addon = `${outDir}tkgate-not-dumpable.node`;

try {
  mkdirSync(outDir, { recursive: true });
  execFileSync(compiler, ['-O2', '-Wall', '-Wextra', '-o', binary, source], { stdio: 'inherit' });
  // Started without its link (fd 3), the helper says so and exits 2: proof that it runs on this machine.
  try {
    execFileSync(binary, [], { stdio: 'ignore' });
  } catch (err) {
    if (err.status !== 2) throw err;
  }
  console.log(`@tkgate/plugin-exec: built ${binary}`);
} catch (err) {
  rmSync(binary, { force: true });
  console.warn(`@tkgate/plugin-exec: the native spawn helper was not built (${err.message.split('\n')[0]}); exec endpoints will use the Node spawn helpers`);
}

// The gateway loads this Node-API module to make itself not dumpable (src/not-dumpable.ts); without it the
// gateway says so once in its log.
try {
  execFileSync(compiler, ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-o', addon, addonSource], { stdio: 'inherit' });
  console.log(`@tkgate/plugin-exec: built ${addon}`);
} catch (err) {
  rmSync(addon, { force: true });
  console.warn(`@tkgate/plugin-exec: the not-dumpable module was not built (${err.message.split('\n')[0]})`);
}
