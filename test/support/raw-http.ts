import net from 'node:net';

export interface RawReply {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends bytes as they are on a new connection to 127.0.0.1 and reads one response: for requests fetch will
 * not send (a Content-Length it does not match, chunked framing by hand). Rejects when no complete head
 * arrives within `deadlineMs`. The body is what arrived until the connection closed or `deadlineMs` passed.
 */
export function rawRequest(port: number, request: string | Buffer, deadlineMs = 10_000): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no response head within ${deadlineMs} ms: ${JSON.stringify(text.slice(0, 200))}`));
      const head = text.slice(0, split);
      resolve({ status: Number(head.split(' ')[1]), head, body: text.slice(split + 4) });
    };
    const timer = setTimeout(finish, deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (completeResponse(received.toString('latin1'))) finish();
    });
    // A reset after the answer arrived (the server closed with our bytes unread) is not a failure.
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(request);
  });
}

/** A response head plus as many body bytes as its Content-Length says. */
function completeResponse(text: string): boolean {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, split));
  return length !== null && text.length - split - 4 >= Number(length[1]);
}
