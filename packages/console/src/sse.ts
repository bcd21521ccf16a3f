/**
 * Server-Sent Events over fetch: EventSource cannot send an Authorization header, so the run page reads
 * `{base}/runs/{id}/output` with fetch and parses the stream here. `SseParser` is pure (the unit tier tests it);
 * `followEvents` reconnects after a network drop with `Last-Event-ID`, so no chunk is lost or repeated.
 */

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** The event stream format (html.spec.whatwg.org, "Parsing an event stream"), fed chunk by chunk. */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  /** The id of the last event dispatched with one: what Last-Event-ID resumes after. */
  lastEventId: string | undefined;

  /** A new connection: a half-received event of the last one is dropped (it is sent again after lastEventId). */
  reset(): void {
    this.buffer = '';
    this.data = [];
    this.event = '';
    this.id = undefined;
  }

  /** The events completed by this chunk of text. */
  feed(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const events: SseEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') {
      if (this.data.length === 0 && this.event === '') return undefined;
      const event: SseEvent = { event: this.event || 'message', data: this.data.join('\n') };
      if (this.id !== undefined) event.id = this.lastEventId = this.id;
      this.data = [];
      this.event = '';
      this.id = undefined;
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') this.data.push(value);
    else if (name === 'event') this.event = value;
    else if (name === 'id' && !value.includes('\0')) this.id = value;
    return undefined;
  }
}

export interface FollowOptions {
  url: string;
  headers: Record<string, string>;
  onEvent: (event: SseEvent) => void;
  /** Called with each answer that is not 200 (a 401 signs out); following stops. */
  onRefused: (response: Response) => void;
  /** Whether the stream is over: an `end` event was seen. */
  ended: () => boolean;
  signal: AbortSignal;
  /** Wait before a reconnection (default 1 s). */
  retryMs?: number;
  fetch?: typeof fetch;
}

/** Reads the stream until it ends or the signal aborts; a dropped connection is resumed after the last id seen. */
export async function followEvents(options: FollowOptions): Promise<void> {
  const parser = new SseParser();
  const get = options.fetch ?? fetch;
  while (!options.signal.aborted && !options.ended()) {
    const headers: Record<string, string> = { ...options.headers, accept: 'text/event-stream' };
    if (parser.lastEventId !== undefined) headers['last-event-id'] = parser.lastEventId;
    parser.reset();
    try {
      const response = await get(options.url, { headers, signal: options.signal, cache: 'no-store' });
      if (response.status !== 200 || !response.body) {
        options.onRefused(response);
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const event of parser.feed(value)) options.onEvent(event);
      }
    } catch (err) {
      if (options.signal.aborted) return;
      void err;
    }
    if (!options.ended() && !options.signal.aborted) await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 1000));
  }
}

/** ANSI escape sequences (colours, cursor moves): stripped from output, which is shown as text only. */
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

export const stripAnsi = (text: string): string => text.replace(ANSI, '');
