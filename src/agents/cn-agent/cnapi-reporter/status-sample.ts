/**
 * The status report a real cn-agent sends (`POST /servers/<uuid>/events/status`), computed from
 * the CN's real VMs against its sysinfo hardware (the original dummy sent `vms: {}` and fixed
 * numbers). CNAPI stores `vms` as `server.vms`, `meminfo` as `memory_*` and `diskinfo` as
 * `disk_*`; DAPI places VMs with those figures.
 *
 * The model, since a mock VM writes no data:
 * - memory: a VM whose zone is up (running, provisioning, stopping, ...) holds its
 *   max_physical_memory; the kernel keeps ~1.6 % (at least 512 MiB); availrmem is the rest;
 *   the ARC is reported as 1/8 of what is available (it is reclaimable, so not subtracted).
 * - disk: kvm VMs' disks are zvols (volsize = used: thick provisioned) and their quota counts as
 *   kvm_quota; every other brand's quota is zone_quota, with bhyve disks counted as used inside
 *   it; each VM has a 100 GiB cores quota (nothing used); installed images are the distinct
 *   image_uuids with a known image_size; the system uses 256 MiB; the pool is "Zpool Size in GiB".
 */
import type { Sysinfo } from '../../../common/sysinfo.js';
import { sysinfoHardware } from '../../../mockcn/sysinfo-file.js';
import type { CnConditions, MockCn } from '../../../mockcn/types.js';
import type { Vm } from '../../../vmadm/types.js';

export interface StatusVm {
  brand: string;
  cpu_cap?: number;
  last_modified?: string;
  max_physical_memory?: number;
  owner_uuid?: string;
  quota?: number;
  state: string;
  uuid: string;
  zone_state?: string;
}

export interface MemInfo {
  availrmem_bytes: number;
  arcsize_bytes: number;
  total_bytes: number;
}

export interface DiskInfo {
  kvm_zvol_used_bytes: number;
  kvm_zvol_volsize_bytes: number;
  kvm_quota_bytes: number;
  kvm_quota_used_bytes: number;
  zone_quota_bytes: number;
  zone_quota_used_bytes: number;
  cores_quota_bytes: number;
  cores_quota_used_bytes: number;
  installed_images_used_bytes: number;
  pool_size_bytes: number;
  pool_alloc_bytes: number;
  system_used_bytes: number;
}

export interface StatusSample {
  vms: Record<string, StatusVm>;
  zpoolStatus: Record<string, { bytes_available: number; bytes_used: number }>;
  meminfo: MemInfo;
  diskinfo: DiskInfo;
  boot_time: string;
  timestamp: string;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
export const CORES_QUOTA_BYTES = 100 * GiB;
export const SYSTEM_USED_BYTES = 256 * MiB;

/** States in which a zone exists in memory. */
const RESIDENT_STATES = new Set(['running', 'provisioning', 'stopping', 'shutting_down', 'ready', 'receiving']);

export function buildStatusSample(
  cn: Pick<MockCn, 'vms' | 'sysinfo' | 'conditions'>,
  now: Date = new Date(),
): StatusSample {
  // DNI VMs use resources like any other; they are only left out of the inventory.
  const all = cn.vms.list({ include_dni: true });
  return {
    vms: inventory(all),
    ...usage(all, cn.sysinfo, cn.conditions),
    boot_time: sysinfoHardware(cn.sysinfo).bootTime ?? now.toISOString(),
    timestamp: now.toISOString(),
  };
}

export function inventory(vms: readonly Vm[]): Record<string, StatusVm> {
  const out: Record<string, StatusVm> = {};
  for (const vm of vms) {
    if (vm.do_not_inventory) continue;
    const entry: StatusVm = { brand: vm.brand, state: vm.state, uuid: vm.uuid };
    if (vm.cpu_cap !== undefined) entry.cpu_cap = vm.cpu_cap;
    if (vm.last_modified !== undefined) entry.last_modified = vm.last_modified;
    if (vm.max_physical_memory !== undefined) entry.max_physical_memory = vm.max_physical_memory;
    if (vm.owner_uuid !== undefined) entry.owner_uuid = vm.owner_uuid;
    if (vm.quota !== undefined) entry.quota = vm.quota;
    if (vm.zone_state !== undefined) entry.zone_state = vm.zone_state;
    out[vm.uuid] = entry;
  }
  return out;
}

function usage(
  vms: readonly Vm[],
  sysinfo: Sysinfo,
  conditions?: CnConditions,
): Pick<StatusSample, 'meminfo' | 'diskinfo' | 'zpoolStatus'> {
  const hw = sysinfoHardware(sysinfo);
  let residentBytes = 0;
  const disk: DiskInfo = {
    kvm_zvol_used_bytes: 0,
    kvm_zvol_volsize_bytes: 0,
    kvm_quota_bytes: 0,
    kvm_quota_used_bytes: 0,
    zone_quota_bytes: 0,
    zone_quota_used_bytes: 0,
    cores_quota_bytes: 0,
    cores_quota_used_bytes: 0,
    installed_images_used_bytes: 0,
    pool_size_bytes: hw.poolSizeBytes,
    pool_alloc_bytes: 0,
    system_used_bytes: SYSTEM_USED_BYTES,
  };
  const images = new Map<string, number>();

  for (const vm of vms) {
    if (RESIDENT_STATES.has(vm.state)) residentBytes += num(vm.max_physical_memory ?? vm.ram) * MiB;
    const quotaBytes = num(vm.quota) * GiB;
    let diskBytes = 0;
    for (const d of vm.disks ?? []) {
      diskBytes += num(d.size) * MiB;
      if (typeof d.image_uuid === 'string' && d.image_size !== undefined) images.set(d.image_uuid, num(d.image_size) * MiB);
    }
    if (vm.brand === 'kvm') {
      disk.kvm_zvol_volsize_bytes += diskBytes;
      disk.kvm_zvol_used_bytes += diskBytes;
      disk.kvm_quota_bytes += quotaBytes;
    } else {
      disk.zone_quota_bytes += quotaBytes;
      if (vm.brand === 'bhyve') disk.zone_quota_used_bytes += diskBytes;
    }
    disk.cores_quota_bytes += CORES_QUOTA_BYTES;
  }
  for (const size of images.values()) disk.installed_images_used_bytes += size;
  const alloc =
    disk.system_used_bytes +
    disk.kvm_zvol_used_bytes +
    disk.kvm_quota_used_bytes +
    disk.zone_quota_used_bytes +
    disk.cores_quota_used_bytes +
    disk.installed_images_used_bytes;
  disk.pool_alloc_bytes = Math.min(alloc, disk.pool_size_bytes || alloc);
  // A zpool-fill event: data the model does not see (a zone filling its dataset, crash dumps).
  if (conditions?.poolFill !== undefined) {
    disk.pool_alloc_bytes = Math.max(disk.pool_alloc_bytes, Math.floor(disk.pool_size_bytes * conditions.poolFill));
  }

  const total = hw.memoryBytes;
  const kernel = Math.min(total, Math.max(512 * MiB, Math.round(total * 0.016)));
  let available = Math.max(0, total - kernel - residentBytes);
  if (conditions?.availableMemoryBytes !== undefined) available = Math.min(available, conditions.availableMemoryBytes);
  return {
    meminfo: { availrmem_bytes: available, arcsize_bytes: Math.floor(available / 8), total_bytes: total },
    diskinfo: disk,
    zpoolStatus: {
      [hw.poolName]: {
        bytes_available: Math.max(0, disk.pool_size_bytes - disk.pool_alloc_bytes),
        bytes_used: disk.pool_alloc_bytes,
      },
    },
  };
}

function num(v: unknown): number {
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) && n > 0 ? n : 0;
}
