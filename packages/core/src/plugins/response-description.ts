/** JSON Schema (2020-12), as plain data. */
export type JsonSchema = Record<string, unknown>;

/**
 * What an endpoint type tells the OpenAPI description (GET {base}/openapi.json, `tkgate openapi`) about
 * its answers; every part is optional. Without it, `data` is any JSON and only core's errors are listed.
 */
export interface ResponseDescription {
  /** JSON Schema of `data` in the success envelope. */
  data?: JsonSchema;
  /**
   * The 200 answer is not the envelope but the type's own bytes (e.g. a passthrough download): an
   * OpenAPI response object's description and content, by media type.
   */
  raw?: { description: string; content: Record<string, { schema?: JsonSchema }> };
  /**
   * (1.5) The endpoint is a WebSocket: a GET with `Upgrade: websocket` answers 101 and the connection becomes the
   * socket (a plain GET is the type's own error). Shown as a 101 answer with `x-websocket: true`.
   */
  websocket?: { description: string };
  /** The type's own errors: status, code, and when it happens. */
  errors?: ReadonlyArray<{ status: number; code: string; description: string }>;
}
