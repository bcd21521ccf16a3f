import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';
import { eventually } from '../../support/eventually.js';

const { SecretMask } = await coreModule<typeof import('../../../packages/core/src/secrets/secret-mask.js')>('secrets/secret-mask.js');

describe('unit: SecretMask', () => {
  const mask = new SecretMask();
  mask.add('hunter2-secret');
  mask.add('hunter2'); // contained in the longer one: the longer is masked whole
  mask.add('abc'); // too short to mask without mangling ordinary text

  it('replaces every occurrence of a known value with ***, the longest first', () => {
    expect(mask.mask('a hunter2-secret and hunter2 and abc')).to.equal('a *** and *** and abc');
    expect(mask.maskData({ list: ['x hunter2 y'], 'hunter2-secret': 1, n: 5 })).to.deep.equal({ list: ['x *** y'], '***': 1, n: 5 });
  });

  it('masks a value cut across chunks of a stream at every place of the cut', () => {
    const text = 'before hunter2-secret between hunter2 after hunter';
    for (let cut = 0; cut <= text.length; cut++) {
      for (let second = cut; second <= text.length; second += 3) {
        const stream = mask.stream();
        const out = stream.push(text.slice(0, cut)) + stream.push(text.slice(cut, second)) + stream.push(text.slice(second)) + stream.end();
        expect(out, `cut at ${cut} and ${second}`).to.equal('before *** between *** after hunter');
      }
    }
  });

  it('holds back the same length whether or not the text begins a value (what is held says nothing of the values)', () => {
    // The longest value has 14 characters: the last 13 of the text so far wait for the next chunk, whatever they are.
    for (const tail of ['and the hunte', 'and the plain']) {
      const stream = mask.stream();
      expect(stream.push(`some text ${tail}`), tail).to.equal('some text ');
      expect(stream.push(''), tail).to.equal('');
      expect(stream.end(), tail).to.equal(tail);
    }
    const stream = mask.stream();
    expect(stream.push('short')).to.equal('');
    expect(stream.push(' and hunter2-secret, done')).to.equal('short and ***');
    expect(stream.end()).to.equal(', done');
  });

  it('with a release, passes the held-back end on after a pause, masked, and holds nothing more', async () => {
    const released: string[] = [];
    const stream = mask.stream((text) => released.push(text));
    expect(stream.push('waiting for input: hunter2')).to.equal('waiting for i');
    await eventually('the held end is released', () => released.length > 0 || undefined);
    expect(released).to.deep.equal(['nput: ***']);
    expect(stream.push('-secret')).to.equal('');
    expect(stream.end()).to.equal('-secret');
    // Chunks that follow one another within the pause are joined before anything is released.
    const joined: string[] = [];
    const next = mask.stream((text) => joined.push(text));
    const out = next.push('key=hunter2-') + next.push('secret;');
    await eventually('the end is released', () => joined.length > 0 || undefined);
    expect(out + joined.join('')).to.equal('key=***;');
    expect(next.end()).to.equal('');
  });

  it('passes text through untouched while it knows no value', () => {
    const empty = new SecretMask();
    expect(empty.mask('anything')).to.equal('anything');
    expect(empty.stream().push('anything')).to.equal('anything');
  });
});
