/**
 * A captured server's hardware as the daemon's control API takes it for one CN (`hardware`:
 * a profile file's keys, src/mockcn/profile-files.ts): from its sysinfo (CPU, memory, disks,
 * zpool, NICs and their tags, platform, capabilities, headnode boot) and CNAPI's record
 * (traits, reserved, reservoir, overprovision ratios). What a profile cannot say is returned
 * as `lost` (one line each), for the load's report.
 */
import type { Obj } from './format.js';

export const MIRROR_PROFILE = 'mirror';
const ZPOOL_PROFILES = ['mirror', 'raidz', 'raidz1', 'raidz2', 'raidz3', 'striped'];
const TAG_RE = /^[A-Za-z0-9_-]{1,31}$/;
const MAX_NICS = 8;

export interface CapturedHardware {
  hardware: Obj;
  lost: string[];
}

export function hardwareOf(server: Obj): CapturedHardware {
  const si = (typeof server.sysinfo === 'object' && server.sysinfo !== null ? server.sysinfo : {}) as Obj;
  const lost: string[] = [];
  const hw: Obj = { name: MIRROR_PROFILE, description: `mirrored from ${String(server.uuid)}` };
  const str = (key: string, field: string): void => {
    if (typeof si[key] === 'string' && si[key] !== '') hw[field] = si[key];
  };
  str('Manufacturer', 'manufacturer');
  str('Product', 'product');
  str('SKU Number', 'skuNumber');
  str('HW Version', 'hwVersion');
  str('HW Family', 'hwFamily');
  str('CPU Type', 'cpuType');
  str('CPU Virtualization', 'cpuVirtualization');
  str('Live Image', 'platform');
  const num = (...keys: string[]): number | undefined => {
    for (const k of keys) {
      const n = Number(si[k]);
      if (si[k] !== undefined && si[k] !== '' && Number.isInteger(n) && n >= 1) return n;
    }
    return undefined;
  };
  const sockets = num('CPU Socket Count', 'CPU Physical Cores');
  const cores = num('CPU Core Count');
  const threads = num('CPU Count', 'CPU Online Count', 'CPU Total Cores');
  if (sockets !== undefined) hw.cpuPhysicalCores = sockets;
  if (cores !== undefined) hw.cpuCoreCount = cores;
  if (threads !== undefined) hw.cpuTotalCores = threads;
  // Figures that do not fit together (a sysinfo without "CPU Core Count"): the closest that do.
  const s = (hw.cpuPhysicalCores as number | undefined) ?? 1;
  let c = (hw.cpuCoreCount as number | undefined) ?? threads ?? s;
  if (c % s !== 0) {
    c = Math.max(s, Math.round(c / s) * s);
    lost.push(`CPU core count ${String(cores)} is not a multiple of ${s} sockets: ${c}`);
  }
  hw.cpuPhysicalCores = s;
  hw.cpuCoreCount = c;
  hw.cpuTotalCores = Math.max(c, (hw.cpuTotalCores as number | undefined) ?? c);
  const bhyve = num('Bhyve Max Vcpus');
  hw.bhyveMaxVcpus = Math.min(bhyve ?? (hw.cpuTotalCores as number), hw.cpuTotalCores as number);
  const mib = num('MiB of Memory');
  if (mib !== undefined) hw.memoryMiB = mib;
  else lost.push('no "MiB of Memory" in sysinfo');
  const disks = typeof si.Disks === 'object' && si.Disks !== null ? Object.values(si.Disks as Obj) : [];
  const sizes = disks.map((d) => Number((d as Obj)?.['Size in GB'])).filter((n) => Number.isFinite(n) && n > 0);
  if (sizes.length > 0) {
    hw.diskCount = sizes.length;
    hw.diskSizeGB = Math.max(...sizes);
    if (new Set(sizes).size > 1) lost.push(`disks of several sizes (${[...new Set(sizes)].join(', ')} GB): all ${hw.diskSizeGB as number} GB`);
  } else {
    lost.push('no disks in sysinfo: one');
    hw.diskCount = 1;
  }
  if (typeof si['Zpool Profile'] === 'string') {
    if (ZPOOL_PROFILES.includes(si['Zpool Profile'])) hw.zpoolProfile = si['Zpool Profile'];
    else lost.push(`zpool profile ${JSON.stringify(si['Zpool Profile'])}`);
  }
  const pool = Number(si['Zpool Size in GiB']);
  if (Number.isFinite(pool) && pool > 0) hw.zpoolSizeGiB = pool;
  for (const [key, field] of [
    ['VM Capable', 'vmCapable'],
    ['Bhyve Capable', 'bhyveCapable'],
  ] as const) {
    if (typeof si[key] === 'boolean') hw[field] = si[key];
  }
  const boot = si['Boot Parameters'] as Obj | undefined;
  if (boot?.headnode === 'true' || server.headnode === true) hw.headnode = true;
  const nics = nicsOf(si, lost);
  if (nics.length > 0) hw.nics = nics;
  if (typeof server.traits === 'object' && server.traits !== null && !Array.isArray(server.traits)) {
    if (Object.keys(server.traits).length > 0) hw.traits = server.traits;
  }
  // Only what differs from a new CN's (CNAPI's defaults): a placement costs the load a wait
  // for the CN's registration and a ServerUpdate.
  if (server.reserved === true) hw.reserved = true;
  if (server.reservoir === true) hw.reservoir = true;
  const ratios = server.overprovision_ratios;
  if (typeof ratios === 'object' && ratios !== null && !Array.isArray(ratios)) {
    const kept: Obj = {};
    for (const [k, v] of Object.entries(ratios)) if (['cpu', 'ram', 'disk', 'io', 'net'].includes(k) && typeof v === 'number' && v >= 0) kept[k] = v;
    if (Object.keys(kept).length > 0) hw.overprovisionRatios = kept;
  }
  for (const key of ['Link Aggregations', 'Virtual Network Interfaces']) {
    const v = si[key];
    if (typeof v === 'object' && v !== null && Object.keys(v).length > 0) lost.push(`${key} (${Object.keys(v).length})`);
  }
  return { hardware: hw, lost };
}

/** The NICs beside the admin one, in name order (dnet1, ...), by their tags. */
function nicsOf(si: Obj, lost: string[]): { tags: string[] }[] {
  const all = typeof si['Network Interfaces'] === 'object' && si['Network Interfaces'] !== null ? (si['Network Interfaces'] as Obj) : {};
  const out: { tags: string[] }[] = [];
  const names = Object.keys(all).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  for (const name of names) {
    const nic = all[name] as Obj | undefined;
    const tags = Array.isArray(nic?.['NIC Names']) ? (nic!['NIC Names'] as unknown[]).filter((t): t is string => typeof t === 'string') : [];
    if (tags.includes('admin')) {
      if (tags.length > 1) lost.push(`tags ${tags.filter((t) => t !== 'admin').join(', ')} on the admin NIC`);
      continue;
    }
    const good = tags.filter((t) => TAG_RE.test(t));
    if (good.length < tags.length) lost.push(`NIC tag names ${tags.filter((t) => !TAG_RE.test(t)).join(', ')}`);
    out.push({ tags: good });
  }
  if (out.length > MAX_NICS) {
    lost.push(`${out.length - MAX_NICS} NICs beyond ${MAX_NICS}`);
    return out.slice(0, MAX_NICS);
  }
  return out;
}
