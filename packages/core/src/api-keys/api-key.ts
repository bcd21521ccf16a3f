import { hash, randomBytes } from 'node:crypto';
import type { Credential } from '../sessions/credential.js';
import type { CallerRecord } from '../users/user-directory.js';

/** The text every API key starts with: tells a key from a session token at a glance (and to secret scanners). */
export const API_KEY_PREFIX = 'tkg_';

/** `tkg_` + 32 bytes from the CSPRNG in base64url (43 characters). Only its SHA-256 hex is ever kept. */
export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** What is stored: the SHA-256 hex of the whole key text, prefix included. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

const API_KEY_SHAPE = /^tkg_[A-Za-z0-9_-]{43}$/;

export function looksLikeApiKey(candidate: string): boolean {
  return API_KEY_SHAPE.test(candidate);
}

/** A key's public id: 16 hex characters, not secret (listed, revoked by, recorded in the audit trail). */
export function newApiKeyId(): string {
  return randomBytes(8).toString('hex');
}

/** One API key as the database holds it. Times are epoch milliseconds. */
export interface ApiKey {
  readonly keyHash: string;
  readonly id: string;
  readonly userId: number;
  readonly name: string;
  /** The toolkits the key may call; null = every toolkit its owner may call. */
  readonly scope: ReadonlySet<string> | null;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  /** The last use stored (lagging the real one as a session's does); null before the first. */
  readonly lastUsedAt: number | null;
  readonly revokedAt: number | null;
}

/** A key and its owner, as one authenticated request needs them (one read of the database). */
export interface ApiKeyRead {
  key: ApiKey;
  caller: CallerRecord;
  credential: Credential;
}

/** Whether a key lets its caller in now: not revoked, not expired, its owner not disabled. */
export function keyAdmits(read: ApiKeyRead | undefined, now: number): read is ApiKeyRead {
  if (read === undefined || read.caller.disabled) return false;
  const { key } = read;
  return key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now);
}

/** The scope as stored and as answered: a sorted list, [] for every toolkit. */
export const scopeList = (scope: ReadonlySet<string> | null): string[] => (scope === null ? [] : [...scope].sort());

export function parseScope(text: string): ReadonlySet<string> | null {
  const names = JSON.parse(text) as string[];
  return names.length === 0 ? null : new Set(names);
}
