/**
 * Stored form vs loaded form of a VM (docs/vmadm.md "Stored vs derived").
 *
 * Stored (in the file): the VM's configuration, `state`/`autoboot`, `zone_state` only when
 * it differs from `state` (transitions), `boot_timestamp` while running, and the last
 * `exit_status`/`exit_timestamp`. The dummy backend keeps stored values of these, so it
 * reads our files the same way.
 *
 * Derived (added on load, never written): `last_modified` (the file's mtime, which the
 * store sets to the value it announced), `zonename`, `zone_state` (= state unless stored),
 * `pid` and `zoneid` (only while running), `server_uuid`, `datacenter_name`,
 * `platform_buildstamp`, `hvm` (from the brand).
 *
 * Load defaults: what vmadm's load always shows (smartos-live vmload: `resolvers` [],
 * `firewall_enabled` false, `snapshots` newest first, `zonedid`, `v` 1, `routes` {},
 * `zfs_root_recsize` 131072) is filled in when a file written by the dummy or by hand lacks it;
 * the store keeps it from then on.
 */
import type { SysinfoIdentity } from '../common/sysinfo.js';
import { DEFAULT_RECSIZE } from './create.js';
import { HVM_BRANDS } from './properties.js';
import { sortSnapshots } from './snapshots.js';
import type { Vm, VmSnapshot } from './types.js';

/** Never stored by us; dropped when a file written by the dummy carries them. */
export const DERIVED_FIELDS: readonly string[] = [
  'last_modified',
  'zonename',
  'pid',
  'zoneid',
  'server_uuid',
  'datacenter_name',
  'platform_buildstamp',
  'hvm',
];

/**
 * Fill in, on a stored VM read from disk, what vmadm's load always carries; `zonedid` is
 * the store's next debug id for a VM that has none.
 */
export function applyLoadDefaults(stored: Record<string, unknown>, nextZonedid: () => number): void {
  if (!Array.isArray(stored.resolvers)) stored.resolvers = [];
  if (typeof stored.firewall_enabled !== 'boolean') stored.firewall_enabled = false;
  stored.snapshots = Array.isArray(stored.snapshots) ? sortSnapshots(stored.snapshots as VmSnapshot[]) : [];
  if (typeof stored.zonedid !== 'number') stored.zonedid = nextZonedid();
  if (typeof stored.v !== 'number') stored.v = 1;
  if (stored.routes === null || typeof stored.routes !== 'object' || Array.isArray(stored.routes)) stored.routes = {};
  if (typeof stored.zfs_root_recsize !== 'number') stored.zfs_root_recsize = DEFAULT_RECSIZE;
}

export interface VmIdentity {
  serverUuid: string;
  datacenterName: string;
  platformBuildstamp: string;
}

export function identityFromSysinfo(sysinfo: SysinfoIdentity): VmIdentity {
  return {
    serverUuid: sysinfo.UUID,
    datacenterName: sysinfo['Datacenter Name'],
    platformBuildstamp: sysinfo['Live Image'],
  };
}

/** What the store knows about a VM beyond its file content. */
export interface RuntimeInfo {
  lastModified: string;
  /** Assigned at boot, unique among this server's running VMs. */
  zoneid?: number;
}

/** The stored form of a VM object (loaded or raw from a file): a fresh, mutable copy. */
export function toStored(vm: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(vm)) {
    if (DERIVED_FIELDS.includes(k) || v === undefined) continue;
    out[k] = v === null || typeof v !== 'object' ? v : structuredClone(v);
  }
  if (out.state === undefined) out.state = 'running';
  if (out.zone_state === out.state) delete out.zone_state;
  // A stopped VM has no boot time (the dummy persisted stale ones).
  if (out.state !== 'running' && out.zone_state !== 'running') delete out.boot_timestamp;
  return out;
}

/** A process id that stays the same for one boot of one VM. */
export function pidFor(uuid: string, bootTimestamp: string | undefined): number {
  let h = 0x811c9dc5;
  const s = `${uuid}/${bootTimestamp ?? ''}`;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return 1000 + (h % 98000);
}

/** Running for the purpose of pid/zoneid: the zone is up. */
export function zoneRunning(stored: Readonly<Record<string, unknown>>): boolean {
  return (stored.zone_state ?? stored.state) === 'running';
}

/** The loaded form: stored fields plus the derived ones. Not frozen here. */
export function toLoaded(stored: Readonly<Record<string, unknown>>, rt: RuntimeInfo, id: VmIdentity): Vm {
  const vm: Record<string, unknown> = { ...stored };
  vm.last_modified = rt.lastModified;
  const running = zoneRunning(stored);
  if (running) vm.pid = pidFor(String(stored.uuid), stored.boot_timestamp as string | undefined);
  vm.server_uuid = id.serverUuid;
  vm.datacenter_name = id.datacenterName;
  vm.platform_buildstamp = id.platformBuildstamp;
  vm.zonename = stored.uuid;
  vm.hvm = HVM_BRANDS.includes(String(stored.brand));
  if (vm.zone_state === undefined) vm.zone_state = stored.state;
  if (running && rt.zoneid !== undefined) vm.zoneid = rt.zoneid;
  return vm as Vm;
}

export function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
  }
  return v;
}
