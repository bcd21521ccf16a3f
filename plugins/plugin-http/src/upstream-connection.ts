import net from 'node:net';
import tls from 'node:tls';
import { BODY_READ_BYTES, HEAD_READ_BYTES, type ReadBuffers } from './read-buffers.js';
import { tlsConnectOptions, type UpstreamTls } from './upstream-tls.js';

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

/**
 * One TCP connection to an http:// upstream that reads into buffers it does not allocate per read: an
 * answer's head into a small buffer of its own, its body into large ones taken from the pool's shared
 * ReadBuffers and given back once written. While the bytes of one read are still being written to the
 * client, the next read fills another buffer; reading stops while two are out, and a buffer is never read
 * into while the client side still holds it. The connection outlives an exchange when the pool keeps it
 * (keep-alive); whoever uses it now is its `user`.
 *
 * To an https:// upstream it is a TLS connection (tls.connect, verified). Node's TLS socket has no `onread`:
 * each read is a chunk of decrypted bytes (at most one TLS record, 16 KiB) that TLS allocated, handed to the
 * user the same way. The bound is the same in bytes: while two body buffers' worth (2 x BODY_READ_BYTES) is
 * still being written to the client, the socket is paused, and TLS stops reading from TCP once its readable
 * buffer is full; flat in the size of the download. (Two records in flight instead were much slower than
 * undici's stream: docs/performance.md, "Passthrough memory".)
 */
export class UpstreamConnection {
  readonly socket: net.Socket;
  user: ConnectionUser | undefined;
  /**
   * Whether the next reads are of an answer's body (large buffers) or of a head, or of nothing while idle
   * (the small buffer, so that an idle connection holds no large one). The exchange says which.
   */
  bodyReads = false;
  private readonly headBuffer = Buffer.allocUnsafeSlow(HEAD_READ_BYTES);
  private headHeld = false;
  /** Body buffers handed to the user and not yet done with, and their bytes (what bounds a TLS connection). */
  private bodyHeld = 0;
  private bodyBytesHeld = 0;
  private readonly secure: boolean;
  /** The buffer the next read fills: never one the user still holds. */
  private installed: Buffer = this.headBuffer;
  private wanted = true;
  /** Whether the socket's inactivity timer runs: only while a read is wanted and not held back by the client side. */
  private timing = false;
  private silenceMs = 0;

  constructor(
    url: URL,
    private readonly bodyBuffers: ReadBuffers,
    upstreamTls?: UpstreamTls,
  ) {
    const host = hostOf(url);
    this.secure = url.protocol === 'https:';
    if (this.secure) {
      this.socket = tls.connect({ host, port: Number(url.port || 443), ...tlsConnectOptions(upstreamTls, host) });
      this.socket.on('data', (chunk: Buffer) => {
        if (!this.hand(chunk, chunk.length, !this.bodyReads, false)) this.socket.pause();
      });
    } else {
      this.socket = net.connect({
        host,
        port: Number(url.port || 80),
        onread: {
          buffer: () => this.nextBuffer(),
          callback: (bytes: number) => this.onRead(bytes),
        },
      });
    }
    this.socket.setNoDelay(true);
    this.socket.on('error', (err) => this.user?.onError(err));
    this.socket.on('close', () => this.user?.onClose());
    this.socket.on('timeout', () => this.user?.onTimeout());
  }

  /** Asks for data: reading resumes unless two body buffers are still out. */
  read(): void {
    this.wanted = true;
    this.resumeIfFree();
  }

  private resumeIfFree(): void {
    if (this.wanted && this.roomToRead() && !this.socket.destroyed) {
      this.time(true);
      this.socket.resume();
    }
  }

  /** Whether another body read fits the bound: two body buffers out (http), or their bytes' worth of TLS records. */
  private roomToRead(): boolean {
    return this.secure ? this.bodyBytesHeld < 2 * BODY_READ_BYTES : this.bodyHeld < 2;
  }

  /** Starts or stops the silence timer; net.Socket re-arms a running one on every read and write. */
  private time(on: boolean): void {
    if (on === this.timing) return;
    this.timing = on;
    this.socket.setTimeout(on ? this.silenceMs : 0);
  }

  /**
   * How long the upstream may stay silent while a read is wanted, set by whoever uses the connection now (the
   * exchange: the upstream timeout; the pool: its idle limit). A pause for the client's sake (both body
   * buffers still being written, or body bytes waiting for the writer) stops the timer: a slow downloader is
   * not the upstream's silence.
   */
  timeSilence(ms: number): void {
    this.silenceMs = ms;
    this.timing = true;
    this.socket.setTimeout(ms);
  }

  private onRead(bytes: number): boolean {
    const buffer = this.installed;
    return this.hand(buffer, bytes, buffer === this.headBuffer, true);
  }

  /** Hands one read to the user; `pooled`: the buffer is one of the shared body buffers, given back when done. Returns whether to read on. */
  private hand(buffer: Buffer, bytes: number, isHead: boolean, pooled: boolean): boolean {
    if (isHead) this.headHeld = true;
    else {
      this.bodyHeld++;
      this.bodyBytesHeld += bytes;
    }
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      if (isHead) this.headHeld = false;
      else {
        this.bodyHeld--;
        this.bodyBytesHeld -= bytes;
        if (pooled) this.bodyBuffers.give(buffer);
      }
      this.resumeIfFree();
    };
    const user = this.user;
    const more = user ? user.onData(buffer.subarray(0, bytes), done) : false;
    // An exchange that ended within onData may have handed the connection to the pool, which reads on.
    if (!more && this.user === user) this.wanted = false;
    const reading = this.wanted && this.roomToRead();
    if (!reading) this.time(false);
    return reading;
  }

  /**
   * net.Socket asks after each read which buffer the next one fills. A body takes a large one, unless two
   * are out (reading has stopped: the small one waits in place, so that at most two are held); a head or an
   * idle connection gets the small one when it is free.
   */
  private nextBuffer(): Buffer {
    const large = this.bodyReads ? this.bodyHeld < 2 || this.headHeld : this.headHeld;
    this.installed = large ? this.bodyBuffers.take() : this.headBuffer;
    return this.installed;
  }
}
