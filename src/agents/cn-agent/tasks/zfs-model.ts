/**
 * The ZFS view of a mock CN, derived from its sysinfo and VMs, for the zfs_* query tasks:
 * the pool ("Zpool", "Zpool Size in GiB"), the system datasets every SmartOS CN has, one
 * dataset per installed image, and per VM its zone dataset (`<pool>/<uuid>`, quota from the
 * VM), its cores dataset, its disk volumes (bhyve: `<pool>/<uuid>/diskN`, kvm:
 * `<pool>/<uuid>-diskN`) and its snapshots. Pool usage is the status report's figure, so the
 * numbers agree with what CNAPI shows.
 */
import type { MockCn } from '../../../mockcn/types.js';
import { buildStatusSample } from '../cnapi-reporter/status-sample.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface Dataset {
  name: string;
  type: 'filesystem' | 'volume' | 'snapshot';
  used: number;
  /** Bytes available to it (its quota's rest, or the pool's). */
  avail: number;
  refer: number;
  mountpoint: string;
  creation: number;
  quota: number;
  volsize?: number;
  origin?: string;
}

export interface Pool {
  name: string;
  size: number;
  allocated: number;
  free: number;
  health: string;
}

export interface ZfsView {
  pool: Pool;
  datasets: Dataset[];
}

export function zfsView(cn: Pick<MockCn, 'vms' | 'sysinfo'>, images: Iterable<{ uuid: string; size?: number }>): ZfsView {
  const sysinfo = cn.sysinfo;
  const vms = cn.vms.list({ include_dni: true });
  const sample = buildStatusSample(cn);
  const poolName = typeof sysinfo.Zpool === 'string' && sysinfo.Zpool ? sysinfo.Zpool : 'zones';
  const status = sample.zpoolStatus[poolName] ?? { bytes_used: 0, bytes_available: 0 };
  const size = sample.diskinfo.pool_size_bytes || status.bytes_used + status.bytes_available;
  const pool: Pool = { name: poolName, size, allocated: status.bytes_used, free: status.bytes_available, health: 'ONLINE' };
  const poolAvail = pool.free;
  const created = Number.parseInt(String(sysinfo['Zpool Creation'] ?? ''), 10) || 0;

  const ds: Dataset[] = [];
  const fs = (name: string, mountpoint: string, used = 0, extra: Partial<Dataset> = {}): void => {
    ds.push({ name, type: 'filesystem', used, avail: poolAvail, refer: used, mountpoint, creation: created, quota: 0, ...extra });
  };
  fs(poolName, `/${poolName}`, pool.allocated, { refer: 96 * 1024 });
  fs(`${poolName}/config`, 'legacy', 64 * 1024);
  fs(`${poolName}/cores`, 'none', 0);
  fs(`${poolName}/opt`, '/opt', 16 * MiB);
  fs(`${poolName}/var`, '/var', 128 * MiB);
  fs(`${poolName}/usbkey`, '/usbkey', 512 * 1024);
  const memMiB = Number.parseInt(String(sysinfo['MiB of Memory'] ?? ''), 10) || 0;
  ds.push(volume(`${poolName}/dump`, 2 * GiB, created, poolAvail));
  ds.push(volume(`${poolName}/swap`, Math.max(GiB, memMiB * MiB), created, poolAvail));

  for (const img of images) {
    fs(`${poolName}/${img.uuid}`, `/${poolName}/${img.uuid}`, img.size ?? 0);
    ds.push({
      name: `${poolName}/${img.uuid}@final`,
      type: 'snapshot',
      used: 0,
      avail: 0,
      refer: img.size ?? 0,
      mountpoint: '-',
      creation: created,
      quota: 0,
    });
  }

  for (const vm of [...vms].sort((a, b) => a.uuid.localeCompare(b.uuid))) {
    const vmCreated = Math.floor((Date.parse(vm.create_timestamp ?? '') || created * 1000) / 1000);
    const quota = (typeof vm.quota === 'number' ? vm.quota : 0) * GiB;
    const disks = vm.disks ?? [];
    const diskBytes = disks.reduce((n, d) => n + (typeof d.size === 'number' ? d.size * MiB : 0), 0);
    const zoneUsed = vm.brand === 'bhyve' ? diskBytes : 0;
    const zoneName = typeof vm.zfs_filesystem === 'string' ? vm.zfs_filesystem : `${poolName}/${vm.uuid}`;
    const origin = typeof vm.image_uuid === 'string' ? `${poolName}/${vm.image_uuid}@final` : undefined;
    ds.push({
      name: zoneName,
      type: 'filesystem',
      used: zoneUsed,
      avail: quota > 0 ? Math.max(0, quota - zoneUsed) : poolAvail,
      refer: zoneUsed,
      mountpoint: typeof vm.zonepath === 'string' ? vm.zonepath : `/${zoneName}`,
      creation: vmCreated,
      quota,
      ...(origin ? { origin } : {}),
    });
    fs(`${poolName}/cores/${vm.uuid}`, `/${zoneName}/cores`, 0, { creation: vmCreated, quota: 100 * GiB, avail: 100 * GiB });
    disks.forEach((d, i) => {
      if (vm.brand !== 'bhyve' && vm.brand !== 'kvm') return;
      const name = vm.brand === 'kvm' ? `${poolName}/${vm.uuid}-disk${i}` : `${zoneName}/disk${i}`;
      const bytes = typeof d.size === 'number' ? d.size * MiB : 0;
      ds.push({ ...volume(name, bytes, vmCreated, poolAvail), used: bytes });
    });
    for (const snap of vm.snapshots ?? []) {
      ds.push({
        name: `${zoneName}@${snap.name}`,
        type: 'snapshot',
        used: 0,
        avail: 0,
        refer: zoneUsed,
        mountpoint: '-',
        creation: Math.floor((Date.parse(snap.created_at) || vmCreated * 1000) / 1000),
        quota: 0,
      });
    }
  }
  return { pool, datasets: ds };
}

function volume(name: string, size: number, creation: number, avail: number): Dataset {
  return { name, type: 'volume', used: size, avail, refer: size, mountpoint: '-', creation, quota: 0, volsize: size };
}

/** zfs's human-readable number (zfs_nicenum): 1024-based, at most 5 characters. */
export function nicenum(n: number): string {
  const units = ['', 'K', 'M', 'G', 'T', 'P', 'E'];
  let index = 0;
  let v = n;
  while (v >= 1024 && index < units.length - 1) {
    v /= 1024;
    index++;
  }
  if (index === 0) return String(Math.round(n));
  if (Number.isInteger(v)) return `${v}${units[index]}`;
  for (let digits = 2; digits >= 0; digits--) {
    const s = `${v.toFixed(digits)}${units[index]}`;
    if (s.length <= 5) return s;
  }
  return `${Math.round(v)}${units[index]}`;
}

/** `zfs get -p` values of one dataset (parseable: bytes and epoch seconds as strings). */
export function datasetProperties(d: Dataset): Record<string, string> {
  const props: Record<string, string> = {
    type: d.type,
    creation: String(d.creation),
    used: String(d.used),
    available: String(d.avail),
    referenced: String(d.refer),
    compressratio: '1.00x',
    mounted: d.type === 'filesystem' && d.mountpoint.startsWith('/') ? 'yes' : d.type === 'filesystem' ? 'no' : '-',
    quota: String(d.quota),
    reservation: '0',
    recordsize: d.type === 'filesystem' ? '131072' : '-',
    mountpoint: d.mountpoint,
    compression: 'off',
    zoned: 'off',
    refquota: String(d.quota),
    refreservation: d.type === 'volume' ? String(d.volsize ?? 0) : '0',
    origin: d.origin ?? '-',
    volsize: d.type === 'volume' ? String(d.volsize ?? 0) : '-',
    volblocksize: d.type === 'volume' ? '8192' : '-',
  };
  return props;
}

export const KNOWN_PROPERTIES = Object.keys(
  datasetProperties({ name: 'x', type: 'filesystem', used: 0, avail: 0, refer: 0, mountpoint: '-', creation: 0, quota: 0 }),
);
