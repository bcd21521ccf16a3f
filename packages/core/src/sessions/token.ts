import { hash, randomBytes } from 'node:crypto';

/** 32 bytes from the CSPRNG, base64url: 43 characters. Only its SHA-256 hex is ever kept. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function looksLikeToken(candidate: string): boolean {
  return TOKEN_SHAPE.test(candidate);
}
