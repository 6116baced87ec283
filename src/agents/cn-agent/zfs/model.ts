/**
 * The ZFS view of a mock CN: what `zfs list` and `zfs get` would show on it.
 *
 * Derived on every query from the CN's sysinfo and VMs: the pool ("Zpool", "Zpool Size in
 * GiB"), the system datasets every SmartOS CN has, one dataset per installed image (with its
 * `@final` snapshot), and per VM its zone dataset (`<pool>/<uuid>`, quota from the VM, a clone
 * of its image's `@final`), its cores dataset, its disk volumes (bhyve: `<pool>/<uuid>/diskN`,
 * kvm: `<pool>/<uuid>-diskN`) and its snapshots (`@vmsnap-<name>`, as vmadm names them).
 * Pool usage starts from the status report's figure, so the numbers agree with CNAPI's.
 *
 * Laid over that: what the ZFS write tasks changed (state.ts), namely the datasets they made
 * and the properties they set. Their space counts against the pool and in every ancestor's
 * `used`; quotas bound `avail`; inheritable properties pass down the tree.
 */
import type { MockCn } from '../../../mockcn/types.js';
import { buildStatusSample } from '../cnapi-reporter/status-sample.js';
import { parentOf, splitSnapshot } from './names.js';
import { INHERITED_PROPERTIES, KNOWN_PROPERTIES, appliesTo, isUserProperty, propertyDefault, type DatasetType } from './props.js';
import type { ZfsChanges } from './state.js';

export { KNOWN_PROPERTIES } from './props.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface Dataset {
  name: string;
  type: DatasetType;
  used: number;
  /** Bytes available to it (its quotas' rest, or the pool's). */
  avail: number;
  refer: number;
  /** The mountpoint as derived (own datasets: from their properties and parents). */
  mountpoint: string;
  creation: number;
  /** Creation order within a second (own datasets' createtxg stand-in; 0 when derived). */
  txg: number;
  /** The quota it has by construction (a VM's quota); a set `quota` wins over it. */
  quota: number;
  volsize?: number;
  origin?: string;
  /** Made by a ZFS task, not derived from the CN's platform, images or VMs. */
  own: boolean;
  /** For a snapshot: the type of its dataset. */
  headType: DatasetType;
  /** Properties set on it with `zfs set` (parseable values). */
  local: Record<string, string>;
  /** Bytes only it holds, counted against the pool (own datasets). */
  unique: number;
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
  /** In `zfs list` order. */
  datasets: Dataset[];
  byName: ReadonlyMap<string, Dataset>;
}

type CnLike = Pick<MockCn, 'vms' | 'sysinfo'>;

export function zfsView(cn: CnLike, images: Iterable<{ uuid: string; size?: number }>, changes?: ZfsChanges): ZfsView {
  const derived = derivedDatasets(cn, images);
  const { pool } = derived;
  const byName = new Map<string, Dataset>();
  for (const d of derived.datasets) byName.set(d.name, d);

  if (changes) {
    for (const [name, props] of changes.props) {
      const d = byName.get(name);
      if (d) d.local = { ...props };
    }
    // Parents sort before their children and snapshots, so one pass keeps only the datasets
    // whose parent exists (the rest lost it with a VM or image they hung from).
    for (const [name, o] of [...changes.datasets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const parent = parentOf(name);
      const p = parent === undefined ? undefined : byName.get(parent);
      const isSnap = name.includes('@');
      const fits = p && (isSnap ? p.type !== 'snapshot' : p.type === 'filesystem') && (o.type === 'snapshot') === isSnap;
      if (!p || !fits || byName.has(name)) continue;
      byName.set(name, {
        name,
        type: o.type,
        used: o.type === 'snapshot' ? 0 : o.unique,
        avail: 0,
        refer: o.refer,
        mountpoint: '-',
        creation: o.creation,
        txg: o.txg,
        quota: 0,
        ...(o.volsize !== undefined ? { volsize: o.volsize } : {}),
        ...(o.origin !== undefined ? { origin: o.origin } : {}),
        own: true,
        headType: o.type === 'snapshot' ? p.type : o.type,
        local: { ...o.props },
        unique: o.unique,
      });
    }
  }

  const datasets = [...byName.values()].sort(zfsListOrder);
  account(datasets, byName, pool);
  // Parents come first, so a child sees its parent's final mountpoint.
  for (const d of datasets) {
    if (d.type !== 'filesystem') continue;
    if (d.local.mountpoint !== undefined) d.mountpoint = d.local.mountpoint;
    else if (d.own) d.mountpoint = inheritedMountpoint(d, byName);
  }
  return { pool, datasets, byName };
}

/** `zfs list`'s default order: by dataset name, a dataset before its snapshots, those by age. */
function zfsListOrder(a: Dataset, b: Dataset): number {
  const fa = splitSnapshot(a.name);
  const fb = splitSnapshot(b.name);
  if (fa.fs !== fb.fs) return fa.fs < fb.fs ? -1 : 1;
  if (fa.snap === undefined) return -1;
  if (fb.snap === undefined) return 1;
  return a.creation - b.creation || a.txg - b.txg || (a.name < b.name ? -1 : 1);
}

/** The effective value of a quota-like number property. */
function numProp(d: Dataset, name: string, fallback = 0): number {
  const v = d.local[name];
  return v === undefined ? fallback : Number(v);
}

export function effectiveQuota(d: Dataset): number {
  return numProp(d, 'quota', d.quota);
}

/**
 * Space: own datasets' bytes count in every ancestor's `used` and against the pool; a
 * reservation or refreservation holds space too; `avail` is the pool's rest, bounded by every
 * quota on the way up (and the dataset's refquota).
 */
function account(datasets: Dataset[], byName: Map<string, Dataset>, pool: Pool): void {
  let ownBytes = 0;
  let held = 0;
  /** What own datasets below a derived one add to it (its derived parent must add it too). */
  const added = new Map<Dataset, number>();
  // Children before parents: a dataset's used is final when its parent adds it.
  for (const d of [...datasets].reverse()) {
    if (d.type === 'snapshot') continue;
    if (d.own) {
      const before = d.used;
      d.used += Math.max(0, numProp(d, 'refreservation') - d.refer);
      d.used = Math.max(d.used, numProp(d, 'reservation'));
      ownBytes += d.unique;
      held += d.used - before;
    }
    const p = byName.get(parentOf(d.name) ?? '');
    if (!p) continue;
    const add = d.own ? d.used : (added.get(d) ?? 0);
    if (add === 0) continue;
    p.used += add;
    if (!p.own) added.set(p, (added.get(p) ?? 0) + add);
  }
  pool.allocated += ownBytes;
  pool.free = Math.max(0, pool.free - ownBytes);
  const poolAvail = Math.max(0, pool.free - held);
  for (const d of datasets) {
    if (d.type === 'snapshot') continue;
    let avail = poolAvail;
    const refquota = numProp(d, 'refquota', d.own ? 0 : d.quota);
    if (refquota > 0) avail = Math.min(avail, refquota - d.refer);
    for (let a: Dataset | undefined = d; a; a = byName.get(parentOf(a.name) ?? '')) {
      const q = effectiveQuota(a);
      if (q > 0) avail = Math.min(avail, q - a.used);
    }
    d.avail = Math.max(0, avail);
  }
}

/** An own filesystem's inherited mountpoint: its parent's with its name appended. */
function inheritedMountpoint(d: Dataset, byName: ReadonlyMap<string, Dataset>): string {
  const parent = byName.get(parentOf(d.name) ?? '');
  if (!parent || parent.type !== 'filesystem') return `/${d.name}`;
  const pm = parent.mountpoint;
  if (pm === 'none' || pm === 'legacy') return pm;
  const base = d.name.slice(d.name.lastIndexOf('/') + 1);
  return pm === '/' ? `/${base}` : `${pm}/${base}`;
}

function derivedDatasets(cn: CnLike, images: Iterable<{ uuid: string; size?: number }>): { pool: Pool; datasets: Dataset[] } {
  const sysinfo = cn.sysinfo;
  const vms = cn.vms.list({ include_dni: true });
  const sample = buildStatusSample(cn);
  const poolName = typeof sysinfo.Zpool === 'string' && sysinfo.Zpool ? sysinfo.Zpool : 'zones';
  const status = sample.zpoolStatus[poolName] ?? { bytes_used: 0, bytes_available: 0 };
  const size = sample.diskinfo.pool_size_bytes || status.bytes_used + status.bytes_available;
  const pool: Pool = { name: poolName, size, allocated: status.bytes_used, free: status.bytes_available, health: 'ONLINE' };
  const created = Number.parseInt(String(sysinfo['Zpool Creation'] ?? ''), 10) || 0;

  const ds: Dataset[] = [];
  const base = (name: string, type: DatasetType, used: number, creation: number, extra: Partial<Dataset> = {}): Dataset => ({
    name,
    type,
    used,
    avail: 0,
    refer: used,
    mountpoint: type === 'filesystem' ? `/${name}` : '-',
    creation,
    txg: 0,
    quota: 0,
    own: false,
    headType: type,
    local: {},
    unique: 0,
    ...extra,
  });
  const fs = (name: string, mountpoint: string, used = 0, extra: Partial<Dataset> = {}): void => {
    ds.push(base(name, 'filesystem', used, created, { mountpoint, ...extra }));
  };
  const volume = (name: string, bytes: number, creation: number): void => {
    ds.push(base(name, 'volume', bytes, creation, { volsize: bytes }));
  };
  const snapshot = (name: string, refer: number, creation: number, headType: DatasetType): void => {
    ds.push(base(name, 'snapshot', 0, creation, { refer, headType }));
  };

  fs(poolName, `/${poolName}`, pool.allocated, { refer: 96 * 1024 });
  fs(`${poolName}/config`, 'legacy', 64 * 1024);
  fs(`${poolName}/cores`, 'none', 0);
  fs(`${poolName}/opt`, '/opt', 16 * MiB);
  fs(`${poolName}/var`, '/var', 128 * MiB);
  fs(`${poolName}/usbkey`, '/usbkey', 512 * 1024);
  const memMiB = Number.parseInt(String(sysinfo['MiB of Memory'] ?? ''), 10) || 0;
  volume(`${poolName}/dump`, 2 * GiB, created);
  volume(`${poolName}/swap`, Math.max(GiB, memMiB * MiB), created);

  for (const img of images) {
    fs(`${poolName}/${img.uuid}`, `/${poolName}/${img.uuid}`, img.size ?? 0);
    snapshot(`${poolName}/${img.uuid}@final`, img.size ?? 0, created, 'filesystem');
  }

  for (const vm of [...vms].sort((a, b) => a.uuid.localeCompare(b.uuid))) {
    const vmCreated = Math.floor((Date.parse(vm.create_timestamp ?? '') || created * 1000) / 1000);
    const quota = (typeof vm.quota === 'number' ? vm.quota : 0) * GiB;
    const disks = vm.disks ?? [];
    const diskBytes = disks.reduce((n, d) => n + (typeof d.size === 'number' ? d.size * MiB : 0), 0);
    const zoneUsed = vm.brand === 'bhyve' ? diskBytes : 0;
    const zoneName = typeof vm.zfs_filesystem === 'string' ? vm.zfs_filesystem : `${poolName}/${vm.uuid}`;
    const origin = typeof vm.image_uuid === 'string' ? `${poolName}/${vm.image_uuid}@final` : undefined;
    fs(zoneName, typeof vm.zonepath === 'string' ? vm.zonepath : `/${zoneName}`, zoneUsed, {
      creation: vmCreated,
      quota,
      ...(origin ? { origin } : {}),
    });
    fs(`${poolName}/cores/${vm.uuid}`, `/${zoneName}/cores`, 0, { creation: vmCreated, quota: 100 * GiB });
    disks.forEach((d, i) => {
      if (vm.brand !== 'bhyve' && vm.brand !== 'kvm') return;
      const name = vm.brand === 'kvm' ? `${poolName}/${vm.uuid}-disk${i}` : `${zoneName}/disk${i}`;
      volume(name, typeof d.size === 'number' ? d.size * MiB : 0, vmCreated);
    });
    for (const snap of vm.snapshots ?? []) {
      const when = Math.floor((Date.parse(snap.created_at) || vmCreated * 1000) / 1000);
      snapshot(`${zoneName}@vmsnap-${snap.name}`, zoneUsed, when, 'filesystem');
    }
  }
  // A derived parent's used includes its derived children, as the status figures do.
  return { pool, datasets: ds };
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

/** A property's value as set on `d` or inherited from the nearest ancestor that set it. */
function inherited(view: ZfsView, d: Dataset, name: string): string | undefined {
  for (let a: Dataset | undefined = d; a; a = view.byName.get(parentOf(a.name) ?? '')) {
    const v = a.local[name];
    if (v !== undefined) return v;
  }
  return undefined;
}

/** The inheritable properties a snapshot shows (its dataset's); the others are `-` on it. */
const SNAPSHOT_PROPERTIES = new Set(['devices', 'exec', 'setuid', 'primarycache']);

/** `zfs get -p` values of one dataset: bytes and epoch seconds as strings, `-` where n/a. */
export function datasetProperties(view: ZfsView, d: Dataset): Record<string, string> {
  const snap = d.type === 'snapshot';
  const head = snap ? view.byName.get(splitSnapshot(d.name).fs) : d;
  const value = (name: string): string => {
    if (!appliesTo(name, d.type, d.headType)) return '-';
    switch (name) {
      case 'type':
        return d.type;
      case 'creation':
        return String(d.creation);
      case 'used':
        return String(d.used);
      case 'available':
        return snap ? '-' : String(d.avail);
      case 'referenced':
        return String(d.refer);
      case 'compressratio':
        return '1.00x';
      case 'mounted':
        return snap ? '-' : d.mountpoint.startsWith('/') && d.local.canmount !== 'off' ? 'yes' : 'no';
      case 'mountpoint':
        return snap ? '-' : d.mountpoint;
      case 'origin':
        return d.origin ?? '-';
      case 'volsize':
        return snap ? '-' : String(numProp(d, 'volsize', d.volsize ?? 0));
      case 'volblocksize':
        return '8192';
      case 'quota':
        return snap ? '-' : String(effectiveQuota(d));
      case 'refquota':
        return snap ? '-' : String(numProp(d, 'refquota', d.own ? 0 : d.quota));
      case 'refreservation':
        return snap ? '-' : String(numProp(d, 'refreservation', d.type === 'volume' && !d.own ? (d.volsize ?? 0) : 0));
      case 'reservation':
      case 'canmount':
        return snap ? '-' : (d.local[name] ?? propertyDefault(name) ?? '-');
      default: {
        if (snap && !SNAPSHOT_PROPERTIES.has(name)) return '-';
        const from = snap && head ? head : d;
        if (!INHERITED_PROPERTIES.includes(name)) return from.local[name] ?? propertyDefault(name) ?? '-';
        return inherited(view, from, name) ?? propertyDefault(name) ?? '-';
      }
    }
  };
  const props: Record<string, string> = {};
  for (const name of KNOWN_PROPERTIES) props[name] = value(name);
  for (const a of ancestorsAndSelf(view, d)) {
    for (const [k, v] of Object.entries(a.local)) if (isUserProperty(k) && !(k in props)) props[k] = v;
  }
  return props;
}

function ancestorsAndSelf(view: ZfsView, d: Dataset): Dataset[] {
  const out: Dataset[] = [];
  for (let a: Dataset | undefined = d; a; a = view.byName.get(parentOf(a.name) ?? '')) out.push(a);
  return out;
}
