import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A request the receiver got: its path, headers and body, and the status it answered (null: none yet, or never). */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number | null;
}

/** How the receiver answers a path's nth request of one webhook-id (1, 2, ...): a status, or 'hang' (never answers). */
export type Answering = (n: number) => number | 'hang';

/**
 * A webhook receiver on loopback for notification tests: answers each path as told and keeps every request.
 * `verify` checks a Standard Webhooks request with the specification's reference library, as a receiver would.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly counts = new Map<string, number>();
  private readonly hung = new Set<ServerResponse>();
  private server: Server | undefined;
  port = 0;

  constructor(private readonly answers: Record<string, Answering>) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const path = req.url ?? '/';
        // Counted per event (its webhook-id), so that suites sharing the receiver see the same answers.
        const key = `${path}\0${String(req.headers['webhook-id'] ?? '')}`;
        const n = (this.counts.get(key) ?? 0) + 1;
        this.counts.set(key, n);
        const entry: Received = { path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: null };
        this.received.push(entry);
        const answer = (this.answers[path] ?? (() => 404))(n);
        if (answer === 'hang') {
          this.hung.add(res);
          return;
        }
        entry.answered = answer;
        res.writeHead(answer, answer >= 300 && answer < 400 ? { location: `http://127.0.0.1:${this.port}/elsewhere` } : {});
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  at(path: string): Received[] {
    return this.received.filter((entry) => entry.path === path);
  }

  async stop(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** A request's body, verified as Standard Webhooks with `secret` (throws when the signature does not hold). */
export function verified(secret: string, entry: Received): Record<string, unknown> {
  const headers = {
    'webhook-id': String(entry.headers['webhook-id']),
    'webhook-timestamp': String(entry.headers['webhook-timestamp']),
    'webhook-signature': String(entry.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(entry.body, headers) as Record<string, unknown>;
}

/** A signing key as Standard Webhooks writes them: whsec_ and base64 of random bytes. */
export const signingKey = (): string => `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64')}`;

/** A standard-webhooks sink of `notifications.sinks` posting to `url`, signed with the key in the environment variable `keyVariable`. */
export const standardSink = (name: string, url: string, keyVariable: string, extra: Record<string, unknown> = {}) => ({
  name,
  url,
  format: 'standard-webhooks',
  secret: { secret: `env:${keyVariable}` },
  ...extra,
});
