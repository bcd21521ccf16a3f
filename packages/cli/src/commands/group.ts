import { addGroup, associate, override, recordCliChange } from '@tkgate/core';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

export const groupAdd: Command = {
  name: 'group add',
  usage: 'group add NAME',
  summary: 'create a core group',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [name] }) {
    const id = await withDatabase(values, async (db) => {
      const id = await addGroup(db, name!);
      await recordCliChange(db, 'group_add', { group: name, group_id: id });
      return id;
    });
    process.stdout.write(`core group ${name} added (id ${id})\n`);
  },
};

export const groupAssoc: Command = {
  name: 'group assoc',
  usage: 'group assoc TOOLKIT CORE_GROUP TOOLKIT_GROUP',
  summary: 'members of CORE_GROUP are TOOLKIT_GROUP in TOOLKIT',
  options: {},
  operands: { min: 3, max: 3 },
  async run({ values, operands: [toolkit, coreGroup, toolkitGroup] }) {
    await withDatabase(values, async (db) => {
      await associate(db, toolkit!, coreGroup!, toolkitGroup!);
      await recordCliChange(db, 'group_assoc', { toolkit, core_group: coreGroup, toolkit_group: toolkitGroup });
    });
    process.stdout.write(`${coreGroup} is ${toolkitGroup} in ${toolkit}\n`);
  },
};

export const groupOverride: Command = {
  name: 'group override',
  usage: 'group override TOOLKIT USER TOOLKIT_GROUP',
  summary: 'USER is TOOLKIT_GROUP in TOOLKIT, whatever their core group',
  options: {},
  operands: { min: 3, max: 3 },
  async run({ values, operands: [toolkit, username, toolkitGroup] }) {
    await withDatabase(values, async (db) => {
      await override(db, toolkit!, username!, toolkitGroup!);
      await recordCliChange(db, 'group_override', { toolkit, username, toolkit_group: toolkitGroup });
    });
    process.stdout.write(`${username} is ${toolkitGroup} in ${toolkit}\n`);
  },
};
