// `node scripts/sso-dev-provider.js [--gateway http://127.0.0.1:8080/api]`: an OpenID provider to try single
// sign-on on one machine (docs/sso.md, "Trying it"). It is oidc-provider (a dev dependency of this checkout) with
// its development login and consent pages: any user name you type signs in, with the claims below. Never expose it.
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';

const { values } = parseArgs({ options: { gateway: { type: 'string', default: 'http://127.0.0.1:8080/api' }, port: { type: 'string', default: '9000' } } });
const issuer = `http://127.0.0.1:${values.port}`;
const client = { client_id: 'tkgate', client_secret: 'dev-secret-change-me' };

const provider = new Provider(issuer, {
  clients: [
    {
      ...client,
      redirect_uris: [`${values.gateway}/auth/oidc/dev/callback`],
      post_logout_redirect_uris: ['http://127.0.0.1:8000/index.html'],
      backchannel_logout_uri: `${values.gateway}/auth/oidc/dev/backchannel-logout`,
      backchannel_logout_session_required: true,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'email', 'groups'],
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, backchannelLogout: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  // The gateway is on loopback, which the provider's SSRF guard would refuse to call for back-channel logout.
  fetch: (url, { dispatcher, ...options }) => (void dispatcher, globalThis.fetch(url, options)),
  // Whoever signs in as "admin…" gets the admins group, everybody else staff.
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, preferred_username: id, email: `${id}@example.test`, groups: id.startsWith('admin') ? ['admins', 'staff'] : ['staff'] }),
  }),
});
provider.listen(Number(values.port), '127.0.0.1', () => {
  console.log(`OpenID provider for trying tkgate's single sign-on: ${issuer}`);
  console.log(`client_id ${client.client_id}, client_secret ${client.client_secret}`);
});
