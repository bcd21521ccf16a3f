// oidc-provider ships no type declarations; the tests use a small part of it (test/sso/identity-provider.ts).
declare module 'oidc-provider';
