import type { Knex } from 'knex';
import type { Database } from '../db/connect.js';
import { insertReturningId } from '../db/inserted-id.js';
import { notFound } from '../errors.js';
import { checkGroupName } from './names.js';

export async function userIdOf(db: Database, username: string): Promise<number> {
  const row = await db('users').where({ username }).first('id', 'username');
  // Byte for byte, whatever the column's collation (a PAD SPACE one finds "alice" for "alice   ").
  if (!row || row.username !== username) throw notFound('user_not_found', `no user named ${username}`);
  return Number(row.id);
}

/** The id of a core group, created when missing (as `user add --group` promises). */
export async function ensureCoreGroup(db: Knex | Knex.Transaction, name: string): Promise<number> {
  checkGroupName('group', name);
  const existing = await db('core_groups').where({ name }).first('id');
  if (existing) return Number(existing.id);
  const id = await insertReturningId(db, 'core_groups', { name });
  return Number(id);
}

export async function coreGroupIdOf(db: Database, name: string): Promise<number> {
  const row = await db('core_groups').where({ name }).first('id');
  if (!row) throw notFound('group_not_found', `no core group named ${name} (create it with: tkgate group add ${name})`);
  return Number(row.id);
}
