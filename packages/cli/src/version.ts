import { readFileSync } from 'node:fs';

/** This package's version (dist/version.js reads ../package.json, in a checkout as in an install). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
