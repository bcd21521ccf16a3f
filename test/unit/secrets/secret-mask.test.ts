import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

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

  it('masks a value cut across chunks of a stream at every place of the cut, holding back only what may be one', () => {
    const text = 'before hunter2-secret between hunter2 after hunter';
    for (let cut = 0; cut <= text.length; cut++) {
      for (let second = cut; second <= text.length; second += 3) {
        const stream = mask.stream();
        const out = stream.push(text.slice(0, cut)) + stream.push(text.slice(cut, second)) + stream.push(text.slice(second)) + stream.end();
        expect(out, `cut at ${cut} and ${second}`).to.equal('before *** between *** after hunter');
      }
    }
    const stream = mask.stream();
    expect(stream.push('plain text, nothing held ')).to.equal('plain text, nothing held ');
    expect(stream.push('then hunt')).to.equal('then ');
    expect(stream.push('ing')).to.equal('hunting');
  });

  it('passes text through untouched while it knows no value', () => {
    const empty = new SecretMask();
    expect(empty.mask('anything')).to.equal('anything');
    expect(empty.stream().push('anything')).to.equal('anything');
  });
});
