/**
 * Snapshots as vmadm reports them: `snapshots: [{name, size, created_at}]`, newest first,
 * `created_at` from the ZFS `creation` property (whole seconds) and `size` its `written`
 * in MiB (smartos-live vmload addSnapshots), with vmadm's checks: valid ZFS snapshot
 * names, no duplicates, no snapshots of kvm VMs or VMs with delegated datasets, and
 * "No snapshot named ..." for a missing one. A rollback removes the snapshots taken after
 * the target, as `zfs rollback -r` does.
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

/** The time ZFS records for a snapshot taken at `now`: whole seconds. */
function creationTime(now: Date): string {
  return new Date(Math.floor(now.getTime() / 1000) * 1000).toISOString();
}

/**
 * Adds the snapshot in vmadm's order: newest first; snapshots of the same second keep the
 * order they were taken in (vmload's sort is stable over `zfs list`'s creation order).
 */
export function addSnapshot(vm: Stored, name: string, now: Date): void {
  if (vm.brand === 'kvm') throw unsupported(`snapshots for ${String(vm.brand)} VMs currently unsupported`);
  if (Array.isArray(vm.datasets) && vm.datasets.length > 0) {
    throw unsupported('Cannot currently snapshot zones that have datasets');
  }
  const snaps = snapshotsOf(vm);
  if (snaps.some((s) => s.name === name)) throw snapshotExists(name);
  const created_at = creationTime(now);
  let at = 0;
  while (at < snaps.length && snaps[at]!.created_at >= created_at) at++;
  vm.snapshots = [...snaps.slice(0, at), { name, size: 0, created_at }, ...snaps.slice(at)];
}

/** Newest first, ties in the order given (how vmadm lists a VM's snapshots). */
export function sortSnapshots(snaps: readonly VmSnapshot[]): VmSnapshot[] {
  return snaps
    .map((s, i) => ({ s, i }))
    .sort((a, b) => (a.s.created_at > b.s.created_at ? -1 : a.s.created_at < b.s.created_at ? 1 : a.i - b.i))
    .map(({ s }) => s);
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

/**
 * Drop the snapshots taken after `name`: newer ones, and those of the same second listed
 * after it (taken later within that second).
 */
export function rollbackTo(vm: Stored, name: string): void {
  const target = findSnapshot(vm, name);
  const snaps = snapshotsOf(vm);
  const at = snaps.indexOf(target);
  vm.snapshots = snaps.filter(
    (s, i) => s.created_at < target.created_at || (s.created_at === target.created_at && i <= at),
  );
}

export function isSnapshotNotFound(err: unknown): boolean {
  return err instanceof MockcloudError && err.code === 'SnapshotNotFound';
}
