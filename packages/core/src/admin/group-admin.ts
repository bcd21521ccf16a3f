import type { Database } from '../db/connect.js';
import { insertReturningId } from '../db/inserted-id.js';
import { GatewayError } from '../errors.js';
import { checkGroupName, checkToolkitName } from './names.js';
import { coreGroupIdOf, userIdOf } from './lookups.js';

/** Core groups and how they map to toolkit groups (jde_associations, toolkit_overrides). */
export async function addGroup(db: Database, name: string): Promise<number> {
  checkGroupName('group', name);
  if (await db('core_groups').where({ name }).first('id')) throw new GatewayError(409, 'group_exists', `core group ${name} already exists`);
  const id = await insertReturningId(db, 'core_groups', { name });
  return Number(id);
}

/** Members of CORE_GROUP are TOOLKIT_GROUP in TOOLKIT; replaces an earlier association. */
export async function associate(db: Database, toolkit: string, coreGroup: string, toolkitGroup: string): Promise<void> {
  checkToolkitName(toolkit);
  checkGroupName('toolkit_group', toolkitGroup);
  const coreGroupId = await coreGroupIdOf(db, coreGroup);
  await db('jde_associations')
    .insert({ toolkit, core_group_id: coreGroupId, toolkit_group: toolkitGroup })
    .onConflict(['toolkit', 'core_group_id'])
    .merge(['toolkit_group']);
}

/** USER is TOOLKIT_GROUP in TOOLKIT whatever their core group; replaces an earlier override. */
export async function override(db: Database, toolkit: string, username: string, toolkitGroup: string): Promise<void> {
  checkToolkitName(toolkit);
  checkGroupName('toolkit_group', toolkitGroup);
  const userId = await userIdOf(db, username);
  await db('toolkit_overrides').insert({ toolkit, user_id: userId, toolkit_group: toolkitGroup }).onConflict(['toolkit', 'user_id']).merge(['toolkit_group']);
}
