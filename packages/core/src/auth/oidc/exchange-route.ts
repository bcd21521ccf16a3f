import { noteAudit } from '../../audit/audited-action.js';
import { coreError } from '../../errors.js';
import { sendData } from '../../http/envelope.js';
import type { GatewayContext } from '../../http/context.js';
import { unavailableWhenRefused } from '../../db/database-errors.js';
import { hashPrefix } from '../../sessions/session.js';
import { requireFields } from '../body-fields.js';
import { loginData } from '../login-data.js';
import { takeCodeBinding } from './browser-binding.js';
import type { OidcServices } from './oidc-services.js';

const invalidLoginCode = () => coreError('invalid_login_code', 'unknown, used or expired login_code: sign in again');

/**
 * POST {base}/auth/oidc/exchange {"login_code"}: the code taken (once) with the secret of the browser it was issued
 * to (its cookie, browser-binding.ts: from another browser the code is not found), then a session created as a
 * password login creates one (max_per_user, persistence, cache), remembering the provider, `sub` and IdP `sid`;
 * the answer's data is exactly a password login's.
 */
export function oidcExchange({ config, sessions, users, codes, log, metrics }: OidcServices) {
  return async (ctx: GatewayContext): Promise<void> => {
    const body = ctx.request.body as Record<string, unknown>;
    requireFields(body, { login_code: { kind: 'string', maxLength: 128 } }, ['login_code']);
    const code = body.login_code as string;
    const binding = takeCodeBinding(ctx, code);
    if (binding === undefined) {
      log.info('login_code refused', {
        request_id: ctx.state.requestId,
        reason: 'the browser has no cookie for this login_code (another browser, or it expired)',
      });
      throw invalidLoginCode();
    }
    const signedIn = await codes.take(code, binding);
    const user = signedIn && (await users.findCaller(signedIn.userId));
    if (signedIn) noteAudit(ctx, { actorUserId: signedIn.userId, details: { provider: signedIn.provider } });
    if (!signedIn || !user || user.disabled) throw invalidLoginCode();
    const facts = { provider: signedIn.provider, subject: signedIn.subject, sid: signedIn.sid, endSessionUrl: signedIn.endSessionUrl };
    const created = await unavailableWhenRefused('session not created', () => sessions.create(user.id, facts));
    if (!created) throw invalidLoginCode();
    noteAudit(ctx, { credential: hashPrefix(created.session.tokenHash) });
    metrics.login('success', 'oidc');
    log.info('login', { request_id: ctx.state.requestId, user_id: user.id, provider: signedIn.provider, session: hashPrefix(created.session.tokenHash) });
    sendData(ctx, loginData(config, user, created));
  };
}
