// What the release's compiled parts need from the target's C and C++ runtimes: the highest GLIBC_ and
// GLIBCXX_ symbol versions their dynamic tables name (the strings objdump -T would show). The Node
// binary may be built for an old glibc while the native modules, compiled here, need this machine's.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** libstdc++'s GLIBCXX_3.4.N, by the GCC release that brought it (libstdc++6's Debian version). */
// prettier-ignore
const GCC_OF_GLIBCXX = { 21: 5, 22: 6, 23: 7, 24: 7, 25: 8, 26: 9, 27: 9, 28: 10, 29: 11, 30: 12, 31: 13, 32: 13, 33: 14 };

const highest = (text, pattern) => Math.max(0, ...[...text.matchAll(pattern)].map((match) => Number(match[1])));

function compiledFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && (entry.name.endsWith('.node') || entry.name === 'tkgate-spawn-helper' || entry.name === 'node'))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/** Debian dependencies of the staged tree: `libc6 (>= 2.N)` and `libstdc++6 (>= GCC)`. */
export function runtimeDepends(stage) {
  let glibc = 17;
  let glibcxx = 0;
  for (const file of compiledFiles(stage)) {
    const text = readFileSync(file).toString('latin1');
    glibc = Math.max(glibc, highest(text, /GLIBC_2\.(\d+)/g));
    glibcxx = Math.max(glibcxx, highest(text, /GLIBCXX_3\.4\.(\d+)/g));
  }
  const gcc = GCC_OF_GLIBCXX[glibcxx];
  return { glibc: `2.${glibc}`, depends: [`libc6 (>= 2.${glibc})`, gcc ? `libstdc++6 (>= ${gcc})` : 'libstdc++6', 'libgcc-s1'] };
}
