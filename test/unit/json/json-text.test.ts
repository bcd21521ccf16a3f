import { expect } from 'chai';
import { isJsonText, jsonText } from '@tkgate/core';

describe('unit: jsonText (json/json-text.ts)', () => {
  it('keeps one JSON value as it is, whitespace around it included, and marks it', () => {
    for (const text of ['{}', ' [1, 2.5e-3, "a\\u00e9\\n", true, false, null] ', '"x"', '-0', '{"a":{"b":[{}]}}']) {
      const checked = jsonText(text, 64);
      expect(isJsonText(checked), text).to.equal(true);
      expect((checked as { text: string }).text).to.equal(text);
    }
  });

  it('gives the same verdict as JSON.parse on broken texts', () => {
    for (const text of ['', '{', '[1,]', '{"a" 1}', "'x'", '01', '1.', '"\\x"', '"a\u0001"', '{} {}', 'nul', 'NaN', '"\\u12"']) {
      expect(() => JSON.parse(text), text).to.throw();
      expect(jsonText(text, 64), text).to.equal('invalid_json');
    }
  });

  it('refuses nesting deeper than the limit, and counts arrays and objects alike', () => {
    expect(jsonText('[[[]]]', 3)).to.have.property('text');
    expect(jsonText('[[[[]]]]', 3)).to.equal('too_deep');
    expect(jsonText('{"a":[{"b":1}]}', 2)).to.equal('too_deep');
  });

  it('isJsonText is false for look-alikes', () => {
    for (const value of [{ text: '{}' }, '{}', null, undefined, 1]) expect(isJsonText(value)).to.equal(false);
  });
});
