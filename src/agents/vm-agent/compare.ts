/**
 * The full-sync comparison between a CN's VMs and what VMAPI lists for it (vm-net-agent-spec
 * §2.2, §2.4): which VMs must be PUT back to VMAPI.
 *
 * The fields compared are the real vm-agent's (the union of its watchers' FIELDS plus
 * boot_timestamp). Where VMAPI's rendering legitimately differs from vmadm's, both sides are
 * normalised first, so an unchanged VM is not re-PUT on every periodic re-sync:
 *   - absent, null and [] are the same (VMAPI renders null / [] defaults: datasets, snapshots, quota);
 *   - times compare as instants (VMAPI may re-render ISO strings);
 *   - `disks` only for kvm and bhyve, the only brands VMAPI keeps them for.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Vm } from '../../vmadm/types.js';

export const COMPARE_FIELDS = [
  'boot_timestamp',
  'brand',
  'datasets',
  'disks',
  'indestructible_delegated',
  'indestructible_zoneroot',
  'last_modified',
  'quota',
  'snapshots',
  'state',
  'uuid',
  'zfs_data_compression',
  'zfs_snapshot_limit',
  'zone_state',
] as const;

const TIME_FIELDS = new Set<string>(['boot_timestamp', 'last_modified']);
const DISK_BRANDS = new Set(['kvm', 'bhyve']);

/** VMAPI-side VM states vm-agent leaves alone even when the CN lacks the VM (see selectVmsToPut). */
const IN_FLIGHT_STATES = new Set(['provisioning']);

function normalise(field: string, value: unknown): unknown {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value) && value.length === 0) return undefined;
  if (TIME_FIELDS.has(field) && typeof value === 'string') {
    const t = Date.parse(value);
    return Number.isNaN(t) ? value : t;
  }
  return value;
}

/** True when VMAPI's copy agrees with the CN's VM over the compared fields. */
export function sameOverComparedFields(local: Vm, remote: Record<string, unknown>): boolean {
  for (const field of COMPARE_FIELDS) {
    if (field === 'disks' && !DISK_BRANDS.has(String(local.brand))) continue;
    if (!isDeepStrictEqual(normalise(field, local[field]), normalise(field, remote[field]))) return false;
  }
  return true;
}

export interface SyncSelection {
  /** uuid → body for `PUT /vms?server_uuid=` (`{vms: ...}`). */
  vms: Record<string, Record<string, unknown>>;
  /** How many of those are VMAPI-only VMs sent back as destroyed. */
  destroyed: number;
  /** VMAPI-only VMs left alone because VMAPI says they are still being provisioned. */
  skippedInFlight: string[];
}

/**
 * What to PUT so VMAPI matches the CN:
 *   - a local VM that VMAPI lacks or holds differently: the full local VM;
 *   - a VM VMAPI lists on this CN that the CN lacks: VMAPI's object with state and zone_state
 *     `destroyed`. Two exceptions: a VM the CN holds as do_not_inventory (a migration in
 *     progress), and one VMAPI still has in state `provisioning`, whose machine_create may simply
 *     not have run yet (the periodic re-sync would otherwise race every provision).
 * `local` must already be without DNI VMs; `dniUuids` are the CN's DNI VMs.
 */
export function selectVmsToPut(
  local: readonly Vm[],
  remote: readonly Record<string, unknown>[],
  dniUuids: ReadonlySet<string>,
): SyncSelection {
  const selection: SyncSelection = { vms: {}, destroyed: 0, skippedInFlight: [] };
  const remoteByUuid = new Map<string, Record<string, unknown>>();
  for (const r of remote) if (typeof r.uuid === 'string') remoteByUuid.set(r.uuid, r);
  const localUuids = new Set<string>();
  for (const vm of local) {
    localUuids.add(vm.uuid);
    const r = remoteByUuid.get(vm.uuid);
    if (!r || !sameOverComparedFields(vm, r)) selection.vms[vm.uuid] = vm;
  }
  for (const [uuid, r] of remoteByUuid) {
    if (localUuids.has(uuid) || dniUuids.has(uuid)) continue;
    if (IN_FLIGHT_STATES.has(String(r.state))) {
      selection.skippedInFlight.push(uuid);
      continue;
    }
    selection.vms[uuid] = { ...r, state: 'destroyed', zone_state: 'destroyed' };
    selection.destroyed++;
  }
  return selection;
}
