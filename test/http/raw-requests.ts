import type net from 'node:net';

/**
 * For raw upstreams in these tests: calls `onRequest` with the path of each request a connection carries, in
 * order, once its head and its Content-Length of body have arrived (requests may come in any segments), with
 * its head (latin1 text, without the blank line) and body.
 */
export function onRequests(socket: net.Socket, onRequest: (path: string, head: string, body: Buffer) => void): void {
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const body = buffered.subarray(end + 4, end + 4 + length);
      buffered = buffered.subarray(end + 4 + length);
      onRequest(head.split(' ')[1]!, head, body);
    }
  });
}
