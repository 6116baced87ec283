/**
 * Which hardware profile a CN was made with (the events engine targets CNs by profile,
 * list-servers shows it): the built-in whose sysinfo "Product" the CN carries, unless
 * `servers/<uuid>/profile.json` (mockcloud's own file, beside the original layout) names another
 * one. The file is written only where the Product does not tell (a profile file's profile) or
 * the CN got a placement at creation, which it also records.
 */
import { readFileSync } from 'node:fs';
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

/**
 * Whether a CN of this profile and placement needs profile.json: not when its sysinfo's
 * "Product" names the profile (a built-in's) and it has no placement, which is the common case
 * and costs creation nothing (a file and its fsync per CN are a quarter of a creation's CPU).
 */
export function needsProfileRecord(record: ProfileRecord, sysinfo: Pick<Sysinfo, 'Product'>): boolean {
  return record.placement !== undefined || profileOfProduct(sysinfo.Product) !== record.profile;
}

/**
 * The CN's profile name: profile.json's, else inferred from its sysinfo. Never fails.
 * Synchronous: a read of a small file, or an ENOENT, from the page cache costs less than the
 * thread-pool round trips of an asynchronous one, once per CN loaded.
 */
export async function readProfileName(serverDir: string, sysinfo: Pick<Sysinfo, 'Product'>): Promise<string> {
  try {
    const value = JSON.parse(readFileSync(path.join(serverDir, PROFILE_FILE), 'utf8')) as { profile?: unknown };
    if (typeof value.profile === 'string' && value.profile !== '') return value.profile;
  } catch {
    // absent (a CN from before) or unreadable: what the sysinfo says
  }
  return profileOfProduct(sysinfo.Product);
}
