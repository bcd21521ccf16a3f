import { availableParallelism } from 'node:os';
import { Algorithm, hash, verify } from '@node-rs/argon2';
import { GatewayError } from '../errors.js';

/**
 * argon2id with the OWASP Password Storage Cheat Sheet's first recommended setting
 * (19 MiB memory, 2 iterations, 1 lane). Hashing runs on libuv's thread pool, off the event loop.
 */
const ARGON2ID = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MAX_PASSWORD_LENGTH = 1024;

/**
 * At most (cores - 1) hashes at once, at least one: a login storm then leaves a core to the event loop,
 * which keeps serving every other request (docs/performance.md, "Logins": status p99 during a storm). Past 256 waiting, a login is refused with 503 busy rather than queued forever.
 */
const HASHING_SLOTS = Math.max(1, availableParallelism() - 1);
const MAX_WAITING = 256;
let hashing = 0;
const waiting: Array<() => void> = [];

async function withHashingSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashing >= HASHING_SLOTS) {
    if (waiting.length >= MAX_WAITING) {
      throw new GatewayError(503, 'busy', 'too many logins at once; try again shortly', { headers: { 'Retry-After': '1' } });
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    hashing++;
  }
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else hashing--;
  }
}

export function hashPassword(password: string): Promise<string> {
  return withHashingSlot(() => hash(password, ARGON2ID));
}

export function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  return withHashingSlot(() => verify(passwordHash, password).catch(() => false));
}

let decoyHash: Promise<string> | undefined;

/**
 * Verifies against a hash of the same cost that matches nothing, so an unknown user
 * costs the same time as a wrong password.
 */
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoyHash ??= hashPassword(`decoy-${Math.random()}`);
  await verifyPassword(await decoyHash, password);
  return false;
}
