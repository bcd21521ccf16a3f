import { addUser, listUsers, recordCliChange, setCoreGroup, setDisabled, setPassword, setPower } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command, OptionValues } from './command.js';
import { withDatabase } from './context.js';
import { readPassword } from './password-input.js';
import { printTable } from './table.js';

function powerOption(values: OptionValues): number | undefined {
  if (values.power === undefined) return undefined;
  if (typeof values.power !== 'string' || !/^-?\d{1,9}$/.test(values.power)) {
    throw new UsageError(`--power must be a whole number, got ${JSON.stringify(values.power)}`);
  }
  return Number(values.power);
}

export const userAdd: Command = {
  name: 'user add',
  usage: 'user add NAME [--power N] [--group CORE_GROUP] [--password-stdin]',
  summary: 'create a user (a missing core group is created)',
  options: { power: { type: 'string' }, group: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [username] }) {
    const power = powerOption(values);
    const password = await readPassword(values['password-stdin'] === true);
    const group = values.group as string | undefined;
    const id = await withDatabase(values, async (db) => {
      const id = await addUser(db, { username: username!, password, power, group });
      await recordCliChange(db, 'user_add', { username, user_id: id, power: power ?? 0, group: group ?? null });
      return id;
    });
    process.stdout.write(`user ${username} added (id ${id})\n`);
  },
};

export const userPasswd: Command = {
  name: 'user passwd',
  usage: 'user passwd NAME [--password-stdin]',
  summary: "set a user's password; ends all of that user's sessions",
  options: { 'password-stdin': { type: 'boolean' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [username] }) {
    const password = await readPassword(values['password-stdin'] === true);
    await withDatabase(values, async (db) => {
      await setPassword(db, username!, password);
      await recordCliChange(db, 'user_passwd', { username });
    });
    process.stdout.write(`password of ${username} changed; their sessions are ended\n`);
  },
};

export const userList: Command = {
  name: 'user list',
  usage: 'user list',
  summary: 'list users',
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const users = await withDatabase(values, (db) => listUsers(db));
    printTable([
      ['ID', 'USERNAME', 'POWER', 'GROUP', 'DISABLED', 'CREATED', 'PROVIDER'],
      ...users.map((u) => [String(u.id), u.username, String(u.power), u.core_group ?? '-', u.disabled ? 'yes' : 'no', u.created_at, u.provider ?? '-']),
    ]);
  },
};

export const userSet: Command = {
  name: 'user set',
  usage: 'user set NAME [--power N] [--group CORE_GROUP]',
  summary: "change a user's power or core group; live on the user's next request",
  options: { power: { type: 'string' }, group: { type: 'string' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [username] }) {
    const power = powerOption(values);
    if (power === undefined && values.group === undefined) throw new UsageError('give --power N, --group CORE_GROUP or both');
    await withDatabase(values, async (db) => {
      if (power !== undefined) await setPower(db, username!, power);
      if (values.group !== undefined) await setCoreGroup(db, username!, values.group as string);
      await recordCliChange(db, 'user_set', {
        username,
        ...(power === undefined ? {} : { power }),
        ...(values.group === undefined ? {} : { group: values.group }),
      });
    });
    process.stdout.write(`user ${username} updated\n`);
  },
};

function disabling(disabled: boolean): Command {
  const verb = disabled ? 'disable' : 'enable';
  return {
    name: `user ${verb}`,
    usage: `user ${verb} NAME`,
    summary: disabled ? 'stop a user from logging in; ends their sessions' : 'let a disabled user log in again',
    options: {},
    operands: { min: 1, max: 1 },
    async run({ values, operands: [username] }) {
      await withDatabase(values, async (db) => {
        await setDisabled(db, username!, disabled);
        await recordCliChange(db, `user_${verb}`, { username });
      });
      process.stdout.write(`user ${username} ${verb}d\n`);
    },
  };
}

export const userDisable = disabling(true);
export const userEnable = disabling(false);
