/**
 * Server-Sent Events framing (the WHATWG HTML standard, "Server-sent events"): a few lines, so no library. A text's
 * lines become `data:` lines (a client joins them with newlines again); CR, LF and CRLF all end a line there.
 */
export function sseEvent(event: string, data: string, id?: number): string {
  const head = id === undefined ? `event: ${event}\n` : `id: ${id}\nevent: ${event}\n`;
  return `${head}data: ${data.split(/\r\n|\r|\n/).join('\ndata: ')}\n\n`;
}

/** A comment line: ignored by clients, it keeps proxies from closing an idle stream. */
export const SSE_KEEPALIVE = ': keep-alive\n\n';

/** Whether the client asks for an event stream. */
export const wantsEventStream = (accept: string | undefined): boolean => accept !== undefined && /\btext\/event-stream\b/i.test(accept);
