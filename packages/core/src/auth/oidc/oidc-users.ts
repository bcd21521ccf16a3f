import { ensureCoreGroup } from '../../admin/lookups.js';
import type { Database } from '../../db/connect.js';
import { insertReturningId } from '../../db/inserted-id.js';
import type { MappedClaims } from './claim-mapping.js';

/** Why a sign-in found no user to continue with; each is the `#error=` the front end gets. */
export type SignInRefusal = 'account_conflict' | 'user_disabled' | 'access_denied' | 'invalid_id_token' | 'invalid_state';

export class SignInRefused extends Error {
  constructor(
    readonly code: SignInRefusal,
    message: string,
  ) {
    super(message);
  }
}

const USERNAME = /^[^\s\p{Cc}]{1,64}$/u;

/**
 * The user of a provider's `sub`: matched by (provider, sub) only, never by username or e-mail. A new one is
 * created (when the provider's create_users allows) with the claimed username, which must be free; power and
 * core group follow the claims at every sign-in. Such users have no password (an empty password_hash).
 */
export async function signInUser(
  db: Database,
  identity: { provider: string; subject: string; createUsers: boolean },
  mapped: MappedClaims,
): Promise<{ id: number; username: string }> {
  return db.transaction(async (trx) => {
    const coreGroupId = mapped.coreGroup === null ? null : await ensureCoreGroup(trx, mapped.coreGroup);
    const known = await trx('users')
      .where({ oidc_provider: identity.provider, oidc_subject: identity.subject })
      .first('id', 'username', 'disabled', 'oidc_subject');
    if (known && String(known.oidc_subject) === identity.subject) {
      if (known.disabled) throw new SignInRefused('user_disabled', 'the user is disabled');
      await trx('users').where({ id: known.id }).update({ power: mapped.power, core_group_id: coreGroupId });
      return { id: Number(known.id), username: String(known.username) };
    }
    if (!identity.createUsers) throw new SignInRefused('access_denied', 'this provider does not create users, and none is linked to this subject');
    const username = mapped.username;
    if (username === undefined || !USERNAME.test(username)) throw new SignInRefused('invalid_id_token', 'the ID token names no usable username');
    const taken = await trx('users').where({ username }).first('id', 'username');
    if (taken && String(taken.username) === username) throw new SignInRefused('account_conflict', 'the username belongs to another user');
    const id = await insertReturningId(trx, 'users', {
      username,
      password_hash: '',
      power: mapped.power,
      core_group_id: coreGroupId,
      disabled: false,
      created_at: Date.now(),
      oidc_provider: identity.provider,
      oidc_subject: identity.subject,
    });
    return { id: Number(id), username };
  });
}
