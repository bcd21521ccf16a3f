import { expect } from 'chai';
import { parseList } from 'structured-headers';
import type { Reply } from '../support/http.js';

/**
 * The rate-limit headers of an answer (IETF httpapi ratelimit-headers), parsed strictly as structured
 * fields (RFC 9651 lists, by the `structured-headers` parser): one item each, a string (the policy name)
 * with integer parameters. Undefined when the answer has none.
 */
export interface RateLimitHeaders {
  policy: { name: string; q: number; w: number };
  state?: { name: string; r: number; t: number };
}

export function rateLimitHeaders(reply: Reply): RateLimitHeaders | undefined {
  const policy = reply.headers.get('ratelimit-policy');
  const state = reply.headers.get('ratelimit');
  if (policy === null) {
    expect(state, 'RateLimit without RateLimit-Policy').to.equal(null);
    return undefined;
  }
  const read = (header: string, keys: string[]) => {
    const list = parseList(header);
    expect(list, header).to.have.length(1);
    const [name, params] = list[0]!;
    expect(name, header).to.be.a('string');
    const values: Record<string, number> = {};
    for (const key of keys) {
      const value = params.get(key);
      expect(Number.isInteger(value), `${header}: ${key}`).to.equal(true);
      values[key] = value as number;
    }
    expect([...params.keys()].sort(), header).to.deep.equal([...keys].sort());
    return { name: name as string, ...values };
  };
  return {
    policy: read(policy, ['q', 'w']) as RateLimitHeaders['policy'],
    ...(state === null ? {} : { state: read(state, ['r', 't']) as RateLimitHeaders['state'] }),
  };
}

/** Waits, when a window of this many seconds (aligned to the epoch) ends within `marginS`, until it has: a burst stays in one window. */
export async function awayFromWindowEnd(windowS: number, marginS = 20): Promise<void> {
  const left = windowS * 1000 - (Date.now() % (windowS * 1000));
  if (left < marginS * 1000) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
