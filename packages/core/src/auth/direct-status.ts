import { randomUUID } from 'node:crypto';
import type { CorsPolicy } from '../http/cors.js';
import type { DirectAnswer } from '../http/direct-answers.js';
import { successText } from '../http/envelope.js';
import { endOfTurn } from '../http/respond-at-turn-end.js';
import type { RequestRecorder } from '../ops/request-log.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { SessionRead } from '../sessions/session-table.js';
import { admits, bearerTokenHash } from './authenticate.js';
import { statusData } from './status.js';

export interface DirectStatusOptions {
  baseUrl: string;
  sessions: SessionStore;
  record: RequestRecorder;
  /** A request with an Origin while CORS is on is Koa's (cors.ts). */
  cors: CorsPolicy;
}

/**
 * `GET {base}/auth/status` with a session this process has cached, answered without Koa (direct-answers.ts).
 * Everything else about status stays with the Koa route (auth-routes.ts), which answers the same bytes:
 * HEAD, a trailing slash or a query string, an Origin with CORS on, a missing, bad or uncached token.
 */
export function directStatus({ baseUrl, sessions, record, cors }: DirectStatusOptions): DirectAnswer {
  const path = `${baseUrl}/auth/status`;
  // The data's text per cached read: the read is replaced, never changed, when the session or user is.
  const dataTexts = new WeakMap<SessionRead, string>();
  const dataText = (read: SessionRead): string => {
    let text = dataTexts.get(read);
    if (text === undefined) dataTexts.set(read, (text = JSON.stringify(statusData(read.session, read.caller))));
    return text;
  };
  return (req, res) => {
    if (req.method !== 'GET' || req.url !== path) return false;
    if (cors.on && req.headers.origin !== undefined) return false;
    const tokenHash = bearerTokenHash(req.headers.authorization);
    const read = tokenHash === undefined ? undefined : sessions.cached(tokenHash);
    if (!admits(read)) return false;
    const started = process.hrtime.bigint();
    const requestId = randomUUID();
    const body = successText(requestId, path, dataText(read));
    const bytes = Buffer.byteLength(body);
    const headers = ['X-Request-Id', requestId, 'Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(bytes)];
    if (cors.variesByOrigin) headers.push('Vary', 'Origin');
    // Written with the turn's other answers, as Koa's are (respond-at-turn-end.ts).
    const send = () => {
      const status = req.socket.destroyed ? 499 : 200;
      res.writeHead(200, headers).end(body);
      record({ req, path, route: 'auth/status', status, seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes, requestId, userId: read.caller.id });
    };
    void endOfTurn().then(send);
    return true;
  };
}
