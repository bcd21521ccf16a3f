import { expect } from 'chai';
import { bareLineFeed, parseHead } from '@tkgate/plugin-http/upstream';

/** parseHead (plugins/plugin-http/src/response-head.ts): strict HTTP/1.1 heads, framing decided once. */
const head = (...lines: string[]) => lines.join('\r\n');
const refused = (text: string) =>
  expect(() => parseHead(text), JSON.stringify(text))
    .to.throw()
    .with.property('reason', 'invalid_response');

describe('parseHead', () => {
  it('reads the status, lower-cases names, joins repeated fields and trims optional whitespace', () => {
    const parsed = parseHead(head('HTTP/1.1 200 OK', 'Content-Type:  text/plain \t', 'X-A: 1', 'x-a: 2', 'Content-Length: 5'));
    expect(parsed.status).to.equal(200);
    expect(parsed.headers).to.deep.equal({ 'content-type': 'text/plain', 'x-a': '1, 2', 'content-length': '5' });
    expect(parsed.framing).to.deep.equal({ kind: 'length', length: 5 });
    expect(parsed.keepAlive).to.equal(true);
  });

  it('takes a status line without a reason phrase, or with any visible reason', () => {
    expect(parseHead('HTTP/1.1 204').status).to.equal(204);
    expect(parseHead('HTTP/1.1 404 Not \tFound \x80').status).to.equal(404);
  });

  it('decides the framing: length, chunked, or until the connection closes (RFC 9112 6.3)', () => {
    expect(parseHead(head('HTTP/1.1 200 OK', 'Transfer-Encoding: Chunked')).framing).to.deep.equal({ kind: 'chunked' });
    expect(parseHead(head('HTTP/1.1 200 OK')).framing).to.deep.equal({ kind: 'close' });
    expect(parseHead(head('HTTP/1.1 200 OK', 'Content-Length: 7', 'Content-Length: 7')).framing).to.deep.equal({ kind: 'length', length: 7 });
    expect(parseHead(head('HTTP/1.1 200 OK', 'Content-Length: 7, 7')).framing).to.deep.equal({ kind: 'length', length: 7 });
    // No body, whatever the fields say.
    for (const status of [204, 304, 100, 103])
      expect(parseHead(head(`HTTP/1.1 ${status} X`, 'Content-Length: 9')).framing).to.deep.equal({ kind: 'length', length: 0 });
  });

  it('keeps the connection only for HTTP/1.1 without Connection: close', () => {
    expect(parseHead('HTTP/1.0 200 OK').keepAlive).to.equal(false);
    expect(parseHead(head('HTTP/1.1 200 OK', 'Connection: keep-alive, Close')).keepAlive).to.equal(false);
    expect(parseHead(head('HTTP/1.1 200 OK', 'Connection: keep-alive')).keepAlive).to.equal(true);
  });

  it("reads the upstream's idle limit from Keep-Alive: timeout=N", () => {
    expect(parseHead(head('HTTP/1.1 200 OK', 'Keep-Alive: timeout=5')).keepAliveMs).to.equal(5000);
    expect(parseHead(head('HTTP/1.1 200 OK', 'Keep-Alive: max=100, timeout=2')).keepAliveMs).to.equal(2000);
    expect(parseHead(head('HTTP/1.1 200 OK', 'Keep-Alive: xtimeout=2')).keepAliveMs).to.equal(undefined);
    expect(parseHead('HTTP/1.1 200 OK').keepAliveMs).to.equal(undefined);
  });

  it('refuses malformed status lines', () => {
    for (const line of [
      '',
      'HTTP/1.1 200OK',
      'HTTP/2 200 OK',
      'HTTP/1.2 200 OK',
      'HTTP/1.1 099 Low',
      'HTTP/1.1 20 OK',
      'HTTP/1.1 2000 OK',
      'http/1.1 200 OK',
      ' HTTP/1.1 200 OK',
      'HTTP/1.1 200 O\x00K',
      'HTTP/1.1  200 OK',
    ])
      refused(line);
  });

  it('refuses malformed field lines: folding, space before the colon, no name, control characters', () => {
    refused(head('HTTP/1.1 200 OK', 'X-A: 1', ' folded'));
    refused(head('HTTP/1.1 200 OK', 'X-A : 1'));
    refused(head('HTTP/1.1 200 OK', ': 1'));
    refused(head('HTTP/1.1 200 OK', 'X-A 1'));
    refused(head('HTTP/1.1 200 OK', 'X-A: 1\x00'));
    refused(head('HTTP/1.1 200 OK', 'X-A: a\rb'));
    refused(head('HTTP/1.1 200 OK', 'X(A): 1'));
    refused(head('HTTP/1.1 200 OK', ''));
  });

  it('refuses ambiguous or invalid framing', () => {
    refused(head('HTTP/1.1 200 OK', 'Content-Length: 5', 'Transfer-Encoding: chunked'));
    refused(head('HTTP/1.1 200 OK', 'Transfer-Encoding: gzip, chunked'));
    refused(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked, chunked'));
    for (const value of ['-1', '5x', '', ' ', '0x5', '1e3', '+5', '5, 6', '1234567890123456']) refused(head('HTTP/1.1 200 OK', `Content-Length: ${value}`));
    refused(head('HTTP/1.1 200 OK', 'Content-Length: 5', 'Content-Length: 6'));
  });

  it('finds bare line feeds (the reader refuses heads with one before parsing)', () => {
    expect(bareLineFeed(Buffer.from('a\r\nb\r\n'))).to.equal(-1);
    expect(bareLineFeed(Buffer.from('\nab'))).to.equal(0);
    expect(bareLineFeed(Buffer.from('a\r\nb\nc'))).to.equal(4);
  });
});
