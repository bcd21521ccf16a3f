import type { Database } from '../db/connect.js';
import { insertReturningId } from '../db/inserted-id.js';
import { GatewayError } from '../errors.js';
import { hashPassword, MAX_PASSWORD_LENGTH } from '../users/passwords.js';
import { ensureCoreGroup, userIdOf } from './lookups.js';
import { checkUsername } from './names.js';

/** User management for the CLI. Each change that must end sessions revokes them for a running gateway too. */
export interface NewUser {
  username: string;
  password: string;
  power?: number;
  group?: string;
}

export interface UserListing {
  id: number;
  username: string;
  power: number;
  core_group: string | null;
  disabled: boolean;
  created_at: string;
  /** The OIDC provider that signs this user in; null for a user with a password. */
  provider: string | null;
}

function checkPassword(password: string): void {
  if (password.length === 0 || password.length > MAX_PASSWORD_LENGTH) {
    throw new GatewayError(400, 'invalid_password', `the password must be 1-${MAX_PASSWORD_LENGTH} characters`);
  }
}

export async function addUser(db: Database, user: NewUser): Promise<number> {
  checkUsername(user.username);
  checkPassword(user.password);
  if (user.power !== undefined && !Number.isSafeInteger(user.power)) {
    throw new GatewayError(400, 'invalid_power', 'power must be a whole number');
  }
  const passwordHash = await hashPassword(user.password);
  return db.transaction(async (trx): Promise<number> => {
    if (await trx('users').where({ username: user.username }).first('id')) {
      throw new GatewayError(409, 'user_exists', `user ${user.username} already exists`);
    }
    const coreGroupId = user.group === undefined ? null : await ensureCoreGroup(trx, user.group);
    const id = await insertReturningId(trx, 'users', {
      username: user.username,
      password_hash: passwordHash,
      power: user.power ?? 0,
      core_group_id: coreGroupId,
      disabled: false,
      created_at: Date.now(),
    });
    return Number(id);
  });
}

/** Ends every session of the user, in the database and (through sessions_revoked_at) in a running gateway. */
export async function revokeSessions(db: Database, userId: number): Promise<number> {
  return db.transaction(async (trx): Promise<number> => {
    await trx('users').where({ id: userId }).update({ sessions_revoked_at: Date.now() });
    return trx('sessions').where({ user_id: userId }).delete();
  });
}

export async function setPassword(db: Database, username: string, password: string): Promise<void> {
  checkPassword(password);
  const userId = await userIdOf(db, username);
  const passwordHash = await hashPassword(password);
  await db('users').where({ id: userId }).update({ password_hash: passwordHash });
  await revokeSessions(db, userId);
}

export async function setDisabled(db: Database, username: string, disabled: boolean): Promise<void> {
  const userId = await userIdOf(db, username);
  await db('users').where({ id: userId }).update({ disabled });
  if (disabled) await revokeSessions(db, userId);
}

export async function setPower(db: Database, username: string, power: number): Promise<void> {
  if (!Number.isSafeInteger(power)) throw new GatewayError(400, 'invalid_power', 'power must be a whole number');
  const userId = await userIdOf(db, username);
  await db('users').where({ id: userId }).update({ power });
}

export async function setCoreGroup(db: Database, username: string, group: string | null): Promise<void> {
  const userId = await userIdOf(db, username);
  await db.transaction(async (trx) => {
    const coreGroupId = group === null ? null : await ensureCoreGroup(trx, group);
    await trx('users').where({ id: userId }).update({ core_group_id: coreGroupId });
  });
}

export async function listUsers(db: Database): Promise<UserListing[]> {
  const rows = await db('users')
    .leftJoin('core_groups', 'core_groups.id', 'users.core_group_id')
    .orderBy('users.id')
    .select('users.id', 'users.username', 'users.power', 'core_groups.name as core_group', 'users.disabled', 'users.created_at', 'users.oidc_provider');
  return rows.map((row) => ({
    id: Number(row.id),
    username: String(row.username),
    power: Number(row.power),
    core_group: row.core_group == null ? null : String(row.core_group),
    disabled: Boolean(row.disabled),
    created_at: new Date(Number(row.created_at)).toISOString(),
    provider: row.oidc_provider == null ? null : String(row.oidc_provider),
  }));
}
