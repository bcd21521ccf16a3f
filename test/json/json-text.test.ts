import { expect } from 'chai';
import { isJsonText, jsonText } from '@tkgate/core';

/**
 * The checker behind spliced upstream answers must agree with JSON.parse on every text: a text it passes
 * goes into answers unparsed. Compared on hand-picked edge cases, then on generated values and their
 * mutations (a seeded generator, so a failure repeats).
 */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function generate(next: () => number, depth: number): string {
  const pick = Math.floor(next() * (depth > 4 ? 5 : 7));
  const space = () => [' ', '', '\n', '\t', '\r', ''][Math.floor(next() * 6)]!;
  switch (pick) {
    case 0:
      return String(Math.floor((next() - 0.5) * 1e6) * [1, 0.001, 1e-7, 1e21][Math.floor(next() * 4)]!);
    case 1:
      return JSON.stringify(['', 'a', 'é\u2028', '"\\/\b\f\n\r\t', '\u0001x', '😀', 'q\\u0041'][Math.floor(next() * 7)]);
    case 2:
      return ['true', 'false', 'null'][Math.floor(next() * 3)]!;
    case 3:
      return String(Math.floor(next() * 100));
    case 4:
      return '"plain"';
    case 5:
      return `[${space()}${Array.from({ length: Math.floor(next() * 4) }, () => generate(next, depth + 1)).join(`${space()},${space()}`)}${space()}]`;
    default:
      return `{${space()}${Array.from({ length: Math.floor(next() * 4) }, (_, i) => `"k${i}"${space()}:${space()}${generate(next, depth + 1)}`).join(`,${space()}`)}${space()}}`;
  }
}

const MUTATIONS = ['', ',', ']', '}', '[', '{', '"', ':', '\\', '-', '.', 'e', '0', '1', ' ', 'x', '\u0000', 'tru', 'nul', '+'];

function mutate(text: string, next: () => number): string {
  const at = Math.floor(next() * (text.length + 1));
  const insert = MUTATIONS[Math.floor(next() * MUTATIONS.length)]!;
  const removed = next() < 0.5 ? 1 : 0;
  return text.slice(0, at) + insert + text.slice(at + removed);
}

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

function expectAgreement(text: string): void {
  const verdict = jsonText(text, 1000);
  expect(isJsonText(verdict), JSON.stringify(text)).to.equal(parses(text));
}

describe('jsonText: checked JSON for answers spliced without parsing', () => {
  it('agrees with JSON.parse on edge cases', () => {
    const cases = [
      '',
      ' ',
      '0',
      '-0',
      '01',
      '1.',
      '.5',
      '1e',
      '1e+',
      '1E-2',
      '-',
      '--1',
      '1.5e10',
      'tru',
      'true',
      'truex',
      'null',
      'nul',
      '""',
      '"',
      '"\\"',
      '"\\u12"',
      '"\\u12G4"',
      '"\\uABCD"',
      '"\\x"',
      '"a\tb"',
      '"\u007f"',
      '[]',
      '[,]',
      '[1,]',
      '[1 2]',
      '{}',
      '{"a"}',
      '{"a":}',
      '{"a":1,}',
      '{"a":1 "b":2}',
      '{a:1}',
      '{"a":1}}',
      '[[]',
      '[]]',
      ' {"a" : [ 1 , {"b":null} ] } ',
      '{"a":1}\n',
      '1 2',
      '[1,{"x":[true,false,null,"s",-1.25e-3]}]',
      '\u00a0[]',
      '[\u2028]',
      '{"":""}',
      '[-]',
      '[1e5,-0.0]',
    ];
    for (const text of cases) expectAgreement(text);
  });

  it('agrees with JSON.parse on 20,000 generated and mutated texts', () => {
    const next = random(20261121);
    for (let n = 0; n < 10_000; n++) {
      const text = generate(next, 0);
      expectAgreement(text);
      expectAgreement(mutate(mutate(text, next), next));
    }
  });

  it('refuses nesting past the depth, without recursion, at any depth', () => {
    expect(isJsonText(jsonText('[[[1]]]', 3))).to.equal(true);
    expect(jsonText('[[[[1]]]]', 3)).to.equal('too_deep');
    expect(jsonText('{"a":{"b":{"c":{}}}}', 3)).to.equal('too_deep');
    expect(jsonText('['.repeat(200_000) + ']'.repeat(200_000), 64)).to.equal('too_deep');
    expect(jsonText('['.repeat(64) + ']'.repeat(64), 64)).to.not.be.a('string');
  });
});
