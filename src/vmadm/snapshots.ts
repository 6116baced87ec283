/**
 * Snapshots as vmadm reports them (`snapshots: [{name, created_at}]`), with vmadm's checks:
 * valid ZFS snapshot names, no duplicates, no snapshots of kvm VMs or VMs with delegated
 * datasets, and "No snapshot named ..." for a missing one. A rollback removes the
 * snapshots taken after the target, as `zfs rollback -r` does.
 */
import { MockcloudError } from '../common/errors.js';
import { invalidValue, snapshotExists, snapshotNotFound, unsupported } from './errors.js';
import type { VmSnapshot } from './types.js';

const MAX_SNAPNAME_LENGTH = 64;
const SNAPNAME_RE = /^[a-zA-Z0-9_.:%-]+$/;

type Stored = Record<string, unknown>;

function snapshotsOf(vm: Stored): VmSnapshot[] {
  return Array.isArray(vm.snapshots) ? (vm.snapshots as VmSnapshot[]) : [];
}

export function checkSnapshotName(name: unknown): string {
  if (typeof name !== 'string' || name.length < 1 || name.length > MAX_SNAPNAME_LENGTH || !SNAPNAME_RE.test(name)) {
    throw invalidValue('snapshot_name', 'Invalid snapshot name');
  }
  return name;
}

/** Adds the snapshot; created_at is strictly later than every existing one (rollback orders by it). */
export function addSnapshot(vm: Stored, name: string, now: Date): void {
  if (vm.brand === 'kvm') throw unsupported(`snapshots for ${String(vm.brand)} VMs currently unsupported`);
  if (Array.isArray(vm.datasets) && vm.datasets.length > 0) {
    throw unsupported('Cannot currently snapshot zones that have datasets');
  }
  const snaps = snapshotsOf(vm);
  if (snaps.some((s) => s.name === name)) throw snapshotExists(name);
  const latest = snaps.reduce((max, s) => Math.max(max, Date.parse(s.created_at) || 0), 0);
  const at = new Date(Math.max(now.getTime(), latest + 1));
  vm.snapshots = [...snaps, { name, created_at: at.toISOString() }];
}

export function findSnapshot(vm: Stored, name: string): VmSnapshot {
  const snap = snapshotsOf(vm).find((s) => s.name === name);
  if (!snap) throw snapshotNotFound(String(vm.uuid), name);
  return snap;
}

export function removeSnapshot(vm: Stored, name: string): void {
  findSnapshot(vm, name);
  vm.snapshots = snapshotsOf(vm).filter((s) => s.name !== name);
}

/** Drop the snapshots taken after `name` (by time; same-time ones by list order). */
export function rollbackTo(vm: Stored, name: string): void {
  const target = findSnapshot(vm, name);
  const snaps = snapshotsOf(vm);
  const at = snaps.indexOf(target);
  vm.snapshots = snaps.filter((s, i) => s.created_at < target.created_at || (s.created_at === target.created_at && i <= at));
}

export function isSnapshotNotFound(err: unknown): boolean {
  return err instanceof MockcloudError && err.code === 'SnapshotNotFound';
}
