import { decodeJwt, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWTPayload } from 'jose';

/** Tokens a hostile party (or a broken provider) could present, made with jose. */
export async function signed(claims: JWTPayload, key: CryptoKey, kid: string, alg = 'RS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, kid }).sign(key);
}

/** `alg: none`: no signature at all. */
export const unsigned = (claims: JWTPayload): string => new UnsecuredJWT(claims).encode();

/** HMAC with the client secret as key: what a provider may do, and what the gateway refuses. */
export const hmacWithSecret = (claims: JWTPayload, secret: string): Promise<string> =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));

/** A key the provider never published. */
export async function strangerKey(): Promise<CryptoKey> {
  return (await generateKeyPair('RS256')).privateKey;
}

/** The claims of a real token, to be changed and signed again. */
export const claimsOf = (token: string): JWTPayload => decodeJwt(token);
