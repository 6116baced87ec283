/**
 * What a mock CN keeps for VM migrations (machine_migrate), beside its VMs: the ZFS facts a
 * migration changes and nothing else models (the `vm-migration-N` sync snapshots of each
 * dataset, a bhyve zone dataset whose quota was lifted for the sync), in
 * `<server dir>/migration.json` (written durably before a step is acknowledged, so an
 * incremental sync still finds its snapshots after a restart), and the listening migration
 * processes of this CN (a sender on the source, a receiver on the target), each under the
 * pid VMAPI records to stop it later (those die with the daemon, as processes with a CN).
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../../../common/durable-file.js';
import type { MockCn } from '../../../mockcn/types.js';
import type { Vm } from '../../../vmadm/types.js';
import type { CnTaskState } from '../types.js';

/** The real agent's SNAPSHOT_NAME_PREFIX. */
export const SNAPSHOT_PREFIX = 'vm-migration-';

/** A migration process of this CN (see listener.ts). */
export interface MigrationProcess {
  readonly pid: number;
  readonly vmUuid: string;
  /** Stop it as a SIGTERM would: close its socket and connections. */
  kill(): void;
}

export interface MigrationState {
  /** zfs dataset name -> its migration snapshots, oldest first. */
  readonly snapshots: Map<string, string[]>;
  /** bhyve zone datasets whose quota remove-zfs-quota lifted. */
  readonly quotaRemoved: Set<string>;
  readonly processes: Map<number, MigrationProcess>;
  nextPid: number;
  /** Make the snapshots and quotas durable (writes are serialised; resolves when on disk). */
  save(): Promise<void>;
}

const states = new WeakMap<CnTaskState, MigrationState>();

export const MIGRATION_FILE = 'migration.json';

interface MigrationFile {
  snapshots: Record<string, string[]>;
  quotaRemoved: string[];
}

function readFile(file: string): MigrationFile {
  try {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<MigrationFile>;
    const snapshots: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(doc.snapshots ?? {})) {
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) snapshots[k] = v;
    }
    const quotaRemoved = Array.isArray(doc.quotaRemoved) ? doc.quotaRemoved.filter((x): x is string => typeof x === 'string') : [];
    return { snapshots, quotaRemoved };
  } catch {
    // None yet (or unreadable): no snapshots, as on a CN that never migrated.
    return { snapshots: {}, quotaRemoved: [] };
  }
}

export function migrationState(ctx: { state: CnTaskState; cn: Pick<MockCn, 'paths'> }): MigrationState {
  let s = states.get(ctx.state);
  if (!s) {
    const file = path.join(ctx.cn.paths.dir, MIGRATION_FILE);
    const doc = readFile(file);
    let chain: Promise<void> = Promise.resolve();
    const st: MigrationState = {
      snapshots: new Map(Object.entries(doc.snapshots)),
      quotaRemoved: new Set(doc.quotaRemoved),
      processes: new Map(),
      nextPid: 61_000,
      save() {
        const next = chain.catch(() => undefined).then(() => {
          const out: MigrationFile = { snapshots: Object.fromEntries(st.snapshots), quotaRemoved: [...st.quotaRemoved] };
          return writeFileDurable(file, `${JSON.stringify(out, null, 2)}\n`);
        });
        chain = next;
        return next;
      },
    };
    s = st;
    states.set(ctx.state, s);
  }
  return s;
}

/** The VM of this CN whose zone dataset (or one of its volumes or children) is `dataset`. */
export function vmOfDataset(cn: Pick<MockCn, 'vms'>, dataset: string): Vm | undefined {
  for (const vm of cn.vms.list({ include_dni: true })) {
    const zfs = zoneDataset(vm);
    if (dataset === zfs || dataset.startsWith(`${zfs}/`)) return vm;
    if (vm.brand === 'kvm' && (vm.disks ?? []).some((d) => d.zfs_filesystem === dataset)) return vm;
    if ((vm.datasets ?? []).includes(dataset)) return vm;
  }
  return undefined;
}

export function zoneDataset(vm: Pick<Vm, 'uuid' | 'zpool' | 'zfs_filesystem'>): string {
  return typeof vm.zfs_filesystem === 'string' ? vm.zfs_filesystem : `${vm.zpool ?? 'zones'}/${vm.uuid}`;
}

/**
 * The datasets a sync sends for a VM (machine-migrate-send.js SyncHandler): the zone
 * dataset (bhyve disks are its children), KVM's disk datasets, a docker VM's shared
 * volumes dataset, and the delegated dataset.
 */
export function datasetsToSync(vm: Record<string, unknown>): string[] {
  const zfs = String(vm.zfs_filesystem);
  const out = new Set([zfs]);
  const disks = Array.isArray(vm.disks) ? (vm.disks as Record<string, unknown>[]) : [];
  if (vm.brand === 'kvm') for (const d of disks) if (typeof d.zfs_filesystem === 'string') out.add(d.zfs_filesystem);
  const filesystems = Array.isArray(vm.filesystems) ? (vm.filesystems as Record<string, unknown>[]) : [];
  if (vm.brand === 'lx' && vm.docker === true && typeof vm.zonepath === 'string') {
    const volume = new RegExp(`^${escapeRe(vm.zonepath)}/volumes/[0-9a-f-]{36}$`);
    if (filesystems.some((f) => f.type === 'lofs' && typeof f.source === 'string' && volume.test(f.source))) out.add(`${zfs}/volumes`);
  }
  const delegated = Array.isArray(vm.datasets) ? vm.datasets : [];
  if (typeof delegated[0] === 'string') out.add(delegated[0]);
  return [...out].sort();
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const MiB = 1024 * 1024;

/**
 * What a `zfs send` of `dataset` carries here: a stand-in size, scaled down from what the
 * dataset holds (a bhyve or KVM VM's disks, 1/64 of it) and kept between 1 and 32 MiB for a
 * full send; an incremental send carries a sixteenth of that.
 */
export function sendSize(cn: Pick<MockCn, 'vms'>, dataset: string, incremental: boolean): number {
  const vm = vmOfDataset(cn, dataset);
  const diskBytes = (vm?.disks ?? []).reduce((n, d) => n + (typeof d.size === 'number' ? d.size * MiB : 0), 0);
  const full = Math.min(32 * MiB, Math.max(MiB, Math.floor(diskBytes / 64)));
  return incremental ? Math.max(64 * 1024, Math.floor(full / 16)) : full;
}
