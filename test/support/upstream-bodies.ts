import { Writable } from 'node:stream';
import type { UpstreamResponse } from '@tkgate/plugin-http/upstream';

/** An upstream transport's answer body as text, whether it is a stream or a writer function (streamed answers). */
export async function bodyOf(response: UpstreamResponse): Promise<string> {
  const chunks: Buffer[] = [];
  if (typeof response.body === 'function') {
    await response.body(
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          chunks.push(Buffer.from(chunk));
          callback();
        },
      }),
    );
  } else for await (const chunk of response.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}
