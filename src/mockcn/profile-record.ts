/**
 * `servers/<uuid>/profile.json`: which hardware profile a CN was made with, and the placement
 * (traits, reserved, ...) it was given at creation. mockcloud's own file, beside the original
 * layout (layout.ts): the events engine targets CNs by profile, list-servers shows it. A CN made
 * before the file existed gets the built-in whose sysinfo "Product" it carries.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Sysinfo } from '../common/sysinfo.js';
import { profileOfProduct, type Placement } from './profiles.js';

export const PROFILE_FILE = 'profile.json';

export interface ProfileRecord {
  profile: string;
  /** The placement asked for at creation (from the profile and the request). */
  placement?: Placement;
}

export function serializeProfileRecord(record: ProfileRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** The CN's profile name: profile.json's, else inferred from its sysinfo. Never fails. */
export async function readProfileName(serverDir: string, sysinfo: Pick<Sysinfo, 'Product'>): Promise<string> {
  try {
    const value = JSON.parse(await fsp.readFile(path.join(serverDir, PROFILE_FILE), 'utf8')) as { profile?: unknown };
    if (typeof value.profile === 'string' && value.profile !== '') return value.profile;
  } catch {
    // absent (a CN from before) or unreadable: what the sysinfo says
  }
  return profileOfProduct(sysinfo.Product);
}
