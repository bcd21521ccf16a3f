import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const source = path.join(root, 'packages/core/src');

/**
 * The layers as docs/architecture.md draws them ("The layers inside core"), top first: each line of its
 * first code block starts with the layer's directories (`pipeline/`) and files (`app.ts`), then says what
 * they are. Read from the doc, so the doc and this guard cannot drift apart.
 */
function documentedLayers(): string[][] {
  const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The layers inside core'));
  const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3));
  return block
    .split('\n')
    .filter((line) => /^\S/.test(line))
    .map((line) => {
      const names: string[] = [];
      for (const token of line.split(/[\s,]+/)) {
        if (!/^[\w.-]+(\/|\.ts)$/.test(token)) break;
        names.push(token);
      }
      return names;
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** A module's layer name: its top directory under src/ (`auth/` for auth/oidc/...) or its file name. */
function layerName(file: string): string {
  const [first, ...rest] = path.relative(source, file).split(path.sep);
  return rest.length > 0 ? `${first}/` : first!.replace(/\.js$/, '.ts');
}

/** The relative modules a file imports, statically or dynamically, type-only imports included. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => path.resolve(path.dirname(file), match[1]!));
}

describe('unit: core imports point down the documented layers (docs/architecture.md)', () => {
  const layers = documentedLayers();
  const layerOf = new Map(layers.flatMap((names, index) => names.map((name) => [name, index] as const)));

  it('reads the layers from the doc', () => {
    expect(layers.length).to.be.greaterThan(5);
    expect(layerOf.get('app.ts')).to.equal(0);
    expect(layerOf.get('http/')).to.be.greaterThan(layerOf.get('plugins/')!);
  });

  it('places every module of packages/core/src in a layer', () => {
    const unplaced = [...new Set(sourceFiles(source).map(layerName))].filter((name) => !layerOf.has(name));
    expect(unplaced, 'add them to the layers in docs/architecture.md').to.deep.equal([]);
  });

  it('has no import from a module of a higher layer', () => {
    const upward: string[] = [];
    for (const file of sourceFiles(source)) {
      const from = layerOf.get(layerName(file))!;
      for (const target of relativeImports(file)) {
        const to = layerOf.get(layerName(target));
        if (to === undefined || to < from) upward.push(`${path.relative(source, file)} -> ${path.relative(source, target)}`);
      }
    }
    expect(upward).to.deep.equal([]);
  });

  it('would see an upward import (the guard guards)', () => {
    const from = layerOf.get(layerName(path.join(source, 'db/migrate.ts')))!;
    const to = layerOf.get(layerName(path.join(source, 'plugins/plugin-loader.js')))!;
    expect(to).to.be.lessThan(from);
  });
});
