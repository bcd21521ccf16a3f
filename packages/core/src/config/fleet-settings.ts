import path from 'node:path';
import { z } from 'zod';
import { parseDuration } from './duration.js';
import type { ServerConfig } from './server-config.js';

const refresh = z
  .union([z.string(), z.number()])
  .transform((value, ctx) => {
    try {
      const ms = parseDuration(value);
      if (ms >= 1_000) return ms;
    } catch {
      // Said below.
    }
    ctx.addIssue({ code: 'custom', message: 'refresh must be a duration of at least 1s, such as "60s"' });
    return z.NEVER;
  })
  .optional();

const source = z.union([
  z.strictObject({
    file: z
      .string()
      .min(1)
      .transform((file) => path.resolve(file)),
  }),
  z.strictObject({
    url: z.string().refine((url) => URL.canParse(url) && ['http:', 'https:'].includes(new URL(url).protocol), 'url must be an http or https URL'),
    refresh,
    headers: z.record(z.string(), z.string()).optional(),
  }),
  z.strictObject({ command: z.array(z.string().min(1)).min(1), refresh }),
]);

/**
 * `fleet.inventory` (docs/fleet.md, "The inventory"): a list of sources, each checked for its shape here (the nodes they
 * hold are read by the plugin that runs on them). A file's path is relative to the working directory, as every path of
 * the server configuration; `TKGATE_FLEET_INVENTORY` names files (comma-separated).
 */
export const inventorySourceList = z.preprocess((value) => {
  // From the environment: file paths (convict splits a list at its commas).
  const listed = typeof value === 'string' ? value.split(',') : value;
  return Array.isArray(listed) ? listed.filter((item) => item !== '').map((item) => (typeof item === 'string' ? { file: item } : item)) : listed;
}, z.array(source).max(100));

export type InventorySourceSetting = z.infer<typeof inventorySourceList>[number];

/** (1.6) PluginApi.fleet. */
export interface FleetSettings {
  /** `fleet.inventory`: `{ file }` (an absolute path), `{ url, refresh?, headers? }`, `{ command, refresh? }`; refresh in ms. */
  inventory: ReadonlyArray<
    { file: string } | { url: string; refresh?: number; headers?: Readonly<Record<string, string>> } | { command: readonly string[]; refresh?: number }
  >;
  /** `fleet.known_hosts`, an absolute path, or undefined. */
  knownHosts?: string;
  /** `fleet.view_power`, else auth.admin_power. */
  viewPower: number;
}

/** The fleet section as plugins get it (PluginApi.fleet): view_power -1 is auth.admin_power. */
export function fleetSettingsOf(config: ServerConfig): FleetSettings {
  const { inventory, known_hosts: knownHosts, view_power: viewPower } = config.fleet;
  return { inventory, ...(knownHosts !== '' ? { knownHosts } : {}), viewPower: viewPower === -1 ? config.auth.admin_power : viewPower };
}
