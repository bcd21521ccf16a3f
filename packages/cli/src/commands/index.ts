import { apikeyCreate, apikeyList, apikeyRevoke } from './apikey.js';
import { audit } from './audit.js';
import { backup } from './backup.js';
import type { Command } from './command.js';
import { configCheck } from './config-check.js';
import { exampleSetup } from './example.js';
import { groupAdd, groupAssoc, groupOverride } from './group.js';
import { migrate } from './migrate.js';
import { openapi } from './openapi.js';
import { notificationsList, notificationsRedeliver } from './notifications.js';
import { fleetNodes } from './fleet.js';
import { runsApprove, runsCancel, runsList, runsOutput, runsReject, runsRerun, runsShow } from './runs.js';
import { schedulesFires, schedulesList, schedulesPause, schedulesPreview, schedulesResume } from './schedules.js';
import { schema } from './schema.js';
import { sessionsClear } from './sessions.js';
import { start } from './start.js';
import { userAdd, userDisable, userEnable, userList, userPasswd, userSet } from './user.js';

export type { Command, OptionValues } from './command.js';

/** Every command, in the order help lists them: adding a command is one import and one entry here. */
const all = [
  start,
  migrate,
  backup,
  userAdd,
  userPasswd,
  userList,
  userSet,
  userDisable,
  userEnable,
  groupAdd,
  groupAssoc,
  groupOverride,
  sessionsClear,
  apikeyCreate,
  apikeyList,
  apikeyRevoke,
  audit,
  runsList,
  runsShow,
  runsOutput,
  runsCancel,
  runsApprove,
  runsReject,
  runsRerun,
  schedulesList,
  schedulesPreview,
  schedulesFires,
  schedulesPause,
  schedulesResume,
  notificationsList,
  notificationsRedeliver,
  fleetNodes,
  configCheck,
  openapi,
  schema,
  exampleSetup,
];

export const commands: Record<string, Command> = Object.fromEntries(all.map((command) => [command.name, command]));
