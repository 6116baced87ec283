/**
 * Reading a server's sysinfo.json, as written by the original create-server (4-space JSON),
 * by its tasks (2-space) or by mockcloud. Validated once here, at the edge: what comes out is
 * a Sysinfo whose UUID is the server dir's name, with every key a real CN's sysinfo has (an
 * older file gets the ones it lacks: sysinfo-keys.ts).
 */
import fs from 'node:fs';
import { MockcloudError } from '../common/errors.js';
import type { Sysinfo } from '../common/sysinfo.js';
import { completeSysinfo } from './sysinfo-keys.js';

/** The run-time keys: where this process listens now and which daemon it is, never what an old file says. */
export const RUNTIME_SYSINFO_KEYS = ['CN Agent IP', 'CN Agent Port', 'Mockcloud Daemon'] as const;

/**
 * The sysinfo key naming the daemon that hosts a mock CN ("<daemon id>@<host>"), beside
 * `CN Agent IP`: many daemons may register CNs with one CNAPI, and each counts its own.
 */
export const DAEMON_SYSINFO_KEY = 'Mockcloud Daemon';

/** The daemon id of a `Mockcloud Daemon` value ("<id>@<host>"), if it has one. */
export function daemonIdOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const at = value.indexOf('@');
  return at > 0 ? value.slice(0, at) : value;
}

/**
 * Keys a running CN derives from its other state: "SDC Agents" is the CN's agents directory
 * (as the real sysinfo lists /opt/smartdc/agents), whatever the file says.
 */
export const DERIVED_SYSINFO_KEYS = ['SDC Agents'] as const;

export async function readSysinfoFile(file: string, expectedUuid: string): Promise<Sysinfo> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8'); // small and read once per CN: no thread-pool trip
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new MockcloudError(
      code === 'ENOENT' ? 'ResourceNotFound' : 'InternalError',
      code === 'ENOENT' ? `${file} is missing` : `cannot read ${file}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return parseSysinfo(text, file, expectedUuid);
}

export function parseSysinfo(text: string, source: string, expectedUuid: string): Sysinfo {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MockcloudError('InvalidContent', `${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MockcloudError('InvalidContent', `${source} is not a JSON object`);
  }
  const sysinfo = value as Sysinfo;
  if (typeof sysinfo.UUID !== 'string' || sysinfo.UUID.toLowerCase() !== expectedUuid.toLowerCase()) {
    throw new MockcloudError(
      'InvalidContent',
      `${source}: UUID ${JSON.stringify(sysinfo.UUID)} does not match server ${expectedUuid}`,
    );
  }
  const nics = sysinfo['Network Interfaces'];
  if (nics !== undefined && (typeof nics !== 'object' || nics === null || Array.isArray(nics))) {
    throw new MockcloudError('InvalidContent', `${source}: "Network Interfaces" is not an object`);
  }
  for (const key of RUNTIME_SYSINFO_KEYS) delete sysinfo[key];
  return completeSysinfo(sysinfo);
}

/** The hardware figures status reports are computed against. */
export interface SysinfoHardware {
  memoryBytes: number;
  poolName: string;
  poolSizeBytes: number;
  /** ISO time from "Boot Time" (epoch seconds, string or number); undefined when unusable. */
  bootTime: string | undefined;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export function sysinfoHardware(sysinfo: Sysinfo): SysinfoHardware {
  const mib = Number.parseInt(String(sysinfo['MiB of Memory'] ?? ''), 10);
  const gib = Number(sysinfo['Zpool Size in GiB']);
  const boot = Number.parseInt(String(sysinfo['Boot Time'] ?? ''), 10);
  return {
    memoryBytes: Number.isFinite(mib) && mib > 0 ? mib * MiB : 0,
    poolName: typeof sysinfo.Zpool === 'string' && sysinfo.Zpool ? sysinfo.Zpool : 'zones',
    poolSizeBytes: Number.isFinite(gib) && gib > 0 ? Math.round(gib * GiB) : 0,
    bootTime: Number.isFinite(boot) ? new Date(boot * 1000).toISOString() : undefined,
  };
}

/** The admin NIC's IP and MAC, from "Admin IP" or the interface tagged admin. */
export function adminNicOf(sysinfo: Sysinfo): { ip?: string; mac?: string } {
  const nics = sysinfo['Network Interfaces'] ?? {};
  for (const nic of Object.values(nics)) {
    if (Array.isArray(nic?.['NIC Names']) && nic['NIC Names'].includes('admin')) {
      return { ip: sysinfo['Admin IP'] || nic.ip4addr || undefined, mac: nic['MAC Address'] };
    }
  }
  return { ip: sysinfo['Admin IP'] || undefined };
}
