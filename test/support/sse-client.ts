import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface FollowOptions {
  token: string;
  /** Sent as Last-Event-ID, as a reconnecting EventSource does. */
  lastEventId?: string;
}

/**
 * A Server-Sent Events client reading a run's output as the events come (fetch's body stream, framed by
 * eventsource-parser, the parser of the `eventsource` package): `events` grows as they arrive, `done` settles
 * when the server ends the stream, `close()` drops the connection as a client that goes away would.
 */
export class SseFollower {
  readonly events: EventSourceMessage[] = [];
  status = 0;
  contentType = '';
  readonly done: Promise<void>;
  private readonly controller = new AbortController();

  constructor(url: string, options: FollowOptions) {
    const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${options.token}` };
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    this.done = (async () => {
      const response = await fetch(url, { headers, signal: this.controller.signal });
      this.status = response.status;
      this.contentType = response.headers.get('content-type') ?? '';
      const parser = createParser({ onEvent: (event) => this.events.push(event) });
      const decoder = new TextDecoder();
      try {
        for await (const bytes of response.body as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(bytes, { stream: true }));
      } catch (err) {
        if (!this.controller.signal.aborted) throw err;
      }
    })();
    this.done.catch(() => undefined);
  }

  close(): void {
    this.controller.abort();
  }

  /** The output events' text, in order. */
  text(): string {
    return this.events
      .filter((event) => event.event === 'stdout' || event.event === 'stderr')
      .map((event) => event.data)
      .join('');
  }
}
