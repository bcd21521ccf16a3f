import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as tkgate exported it, decoded from OTLP/HTTP JSON. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** Status code: 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, string | number | boolean>;
  /** The resource's attributes (service.name). */
  resource: Record<string, string | number | boolean>;
}

/** A loopback OTLP/HTTP traces receiver (JSON encoding), as a collector would be: it keeps every span it is sent. */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Every request body it received, as text (to search for what must never be there). */
  bodies: string[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    attributes[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue!;
  }
  return attributes;
}

/** Ids come as hex in OTLP/JSON; base64 (protobuf's JSON mapping) is read too. */
function hexId(id: string | undefined): string | undefined {
  if (!id) return undefined;
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex');
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver = { spans: [] as ReceivedSpan[], bodies: [] as string[] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      receiver.bodies.push(text);
      const request = JSON.parse(text) as { resourceSpans: any[] };
      for (const resourceSpans of request.resourceSpans) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            receiver.spans.push({
              traceId: hexId(span.traceId)!,
              spanId: hexId(span.spanId)!,
              parentSpanId: hexId(span.parentSpanId),
              name: span.name,
              kind: span.kind,
              status: span.status?.code ?? 0,
              attributes: attributesOf(span.attributes),
              resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    ...receiver,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
