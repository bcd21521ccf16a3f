import net from 'node:net';

/**
 * One TCP connection to an http:// upstream that reads into two buffers it owns, alternately: while the
 * bytes of one are still being written to the client, the next read fills the other. No Buffer is
 * allocated per read (V8 collects those late: a first 100 MB download once raised RSS by 47-68 MB), and a
 * buffer is never overwritten while the client side still holds it. The connection outlives an exchange
 * when the pool keeps it (keep-alive); whoever uses it now is its `user`.
 */
export const READ_BUFFER_BYTES = 128 * 1024;

export interface ConnectionUser {
  /**
   * `data` is a view of one of the connection's buffers; call `done` once nothing refers to it any more
   * (its write flushed). Return false to stop reading until `read()`.
   */
  onData(data: Buffer, done: () => void): boolean;
  onError(err: Error): void;
  /** The upstream closed the connection (after onError, if it failed). */
  onClose(): void;
  onTimeout(): void;
}

/** Where net.connect wants an address: an IPv6 literal without the brackets of its URL form. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

export class UpstreamConnection {
  readonly socket: net.Socket;
  user: ConnectionUser | undefined;
  private readonly buffers = [Buffer.allocUnsafe(READ_BUFFER_BYTES), Buffer.allocUnsafe(READ_BUFFER_BYTES)];
  private readonly held = [false, false];
  /** The buffer the next read fills. */
  private current = 0;
  private wanted = true;

  constructor(url: URL) {
    this.socket = net.connect({
      host: hostOf(url),
      port: Number(url.port || 80),
      onread: {
        buffer: () => this.nextBuffer(),
        callback: (bytes: number) => this.onRead(bytes),
      },
    });
    this.socket.setNoDelay(true);
    this.socket.on('error', (err) => this.user?.onError(err));
    this.socket.on('close', () => this.user?.onClose());
    this.socket.on('timeout', () => this.user?.onTimeout());
  }

  /** Asks for data: reading resumes as soon as the buffer the next read fills is free. */
  read(): void {
    this.wanted = true;
    if (!this.held[this.current] && !this.socket.destroyed) this.socket.resume();
  }

  private onRead(bytes: number): boolean {
    const index = this.current;
    this.held[index] = true;
    const data = this.buffers[index]!.subarray(0, bytes);
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      this.held[index] = false;
      if (index === this.current && this.wanted && !this.socket.destroyed) this.socket.resume();
    };
    const user = this.user;
    const more = user ? user.onData(data, done) : false;
    // An exchange that ended within onData may have handed the connection to the pool, which reads on.
    if (!more && this.user === user) this.wanted = false;
    // Reading goes on only into a free buffer (nextBuffer, called next, picks it).
    return this.wanted && (!this.held[index] || !this.held[1 - index]);
  }

  /** net.Socket asks after each read which buffer the next one fills: a free one, the other if it can. */
  private nextBuffer(): Buffer {
    if (this.held[this.current] && !this.held[1 - this.current]) this.current = 1 - this.current;
    return this.buffers[this.current]!;
  }
}
