import { expect } from 'chai';
import { chunkDecoder } from '@tkgate/plugin-http/upstream';

/** The chunk decoder (plugins/plugin-http/src/chunk-decoder.ts): strict RFC 9112 7.1, across any split of its input. */
const decodeAll = (parts: Array<string | Buffer>) => {
  const decode = chunkDecoder();
  const body: Buffer[] = [];
  let done = false;
  let rest = 0;
  for (const part of parts) {
    const result = decode(Buffer.from(part));
    body.push(...result.slices);
    done = result.done;
    rest = result.rest;
    if (done) break;
  }
  return { body: Buffer.concat(body).toString('latin1'), done, rest };
};
/** Every way to cut `text` in two, and byte by byte. */
const splits = (text: string) => [[text], [...text], ...Array.from({ length: text.length - 1 }, (_, i) => [text.slice(0, i + 1), text.slice(i + 1)])];
const refused = (text: string) =>
  expect(() => decodeAll([text]), JSON.stringify(text))
    .to.throw()
    .with.property('reason', 'invalid_response');

describe('chunk decoder', () => {
  it('decodes chunks with extensions and trailers, however the bytes are split', () => {
    const text = '5;name=value\r\nhello\r\nB\r\n 0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n';
    for (const parts of splits(text)) expect(decodeAll(parts), JSON.stringify(parts)).to.deep.equal({ body: 'hello 0123456789', done: true, rest: 0 });
  });

  it('ends at the last chunk and counts the bytes after it', () => {
    expect(decodeAll(['3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK'])).to.deep.equal({ body: 'abc', done: true, rest: 15 });
    expect(decodeAll(['0\r\n\r\n'])).to.deep.equal({ body: '', done: true, rest: 0 });
  });

  it('is not done before the final CRLF', () => {
    for (const text of ['3\r\nabc\r\n', '3\r\nabc\r\n0\r\n', '3\r\nabc\r\n0\r\nX: 1\r\n', '3\r\nab']) expect(decodeAll([text]).done, text).to.equal(false);
  });

  it('returns views of its input, not copies', () => {
    const input = Buffer.from('5\r\nhello\r\n0\r\n\r\n');
    const { slices } = chunkDecoder()(input);
    expect(slices).to.have.length(1);
    expect(slices[0]!.buffer).to.equal(input.buffer);
  });

  it('refuses malformed chunk sizes, missing CRLFs and oversized lines', () => {
    for (const text of [
      'zz\r\nhello\r\n',
      '\r\nhello\r\n',
      '-5\r\nhello\r\n',
      '0x5\r\nhello\r\n',
      '1234567890123\r\n',
      '5\nhello\r\n',
      '5\r\nhelloX\r\n',
      '5\r\nhello\rX',
      '5\r\nhello\n',
      '0\r\nX-Trailer: 1\n\r\n',
      `1;${'x'.repeat(5000)}\r\n`,
      `0\r\n${'X-T: 1\r\n'.repeat(3000)}\r\n`,
    ])
      refused(text);
  });

  it('refuses whitespace around extensions and malformed extensions or trailer fields, as Node’s parser does', () => {
    for (const text of [
      '5 ;x=1\r\nhello\r\n',
      '5; x=1\r\nhello\r\n',
      '5;x =1\r\nhello\r\n',
      '5\t\r\nhello\r\n',
      '5;e\tx=1\r\nhello\r\n',
      '5;x="a\r\nhello\r\n',
      '0\r\nX-Trailer t\r\n\r\n',
      '0\r\n folded\r\n\r\n',
    ])
      refused(text);
    expect(decodeAll(['5;a;b=c;q="x\\"y"\r\nhello\r\n0\r\nX-T: 1\r\n\r\n'])).to.deep.equal({ body: 'hello', done: true, rest: 0 });
  });
});
