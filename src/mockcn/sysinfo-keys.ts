/**
 * The keys of a SmartOS CN's sysinfo in the order the real script prints them (smartos-live
 * src/sysinfo, `output_json` in the global zone of a Triton CN), and the completion of a
 * sysinfo.json written before mockcloud carried them all: a CN made by the original mockcloud
 * or by an older mockcloud gets the keys it lacks, derived from what it has, and keeps every
 * key and value it already has.
 */
import type { SdcAgent, Sysinfo } from '../common/sysinfo.js';
import type { AgentRecord } from './types.js';

/**
 * Not printed by a CN: "Headnode ID" (only where /.dcinfo has an integer id, which a CN's
 * global zone does not get) and "ZFS Quota" (non-global zones only).
 */
export const SYSINFO_KEY_ORDER = [
  'Live Image',
  'System Type',
  'Boot Time',
  'Datacenter Name',
  'SDC Version',
  'Manufacturer',
  'Product',
  'Serial Number',
  'SKU Number',
  'HW Version',
  'HW Family',
  'Setup',
  'VM Capable',
  'Bhyve Capable',
  'Bhyve Max Vcpus',
  'HVM API',
  'CPU Type',
  'CPU Virtualization',
  'CPU Physical Cores',
  'Admin NIC Tag',
  'Admin IP',
  'UUID',
  'Hostname',
  'CPU Total Cores',
  'CPU Socket Count',
  'CPU Core Count',
  'CPU Online Count',
  'CPU Count',
  'MiB of Memory',
  'Zpool',
  'Zpool Encrypted',
  'Zpool Disks',
  'Zpool Profile',
  'Zpool Creation',
  'Zpool Size in GiB',
  'Zpool Recovery',
  'Disks',
  'Boot Parameters',
  'Psrinfo',
  'SDC Agents',
  'Network Interfaces',
  'Virtual Network Interfaces',
  'Link Aggregations',
] as const;

const KNOWN = new Set<string>(SYSINFO_KEY_ORDER);
const RANK = new Map<string, number>(SYSINFO_KEY_ORDER.map((k, i) => [k, i]));

/** Whether the real keys present come in the real order, before any other key. */
function inOrder(sysinfo: Record<string, unknown>): boolean {
  let last = -1;
  let others = false;
  for (const key of Object.keys(sysinfo)) {
    const rank = RANK.get(key);
    if (rank === undefined) others = true;
    else if (others || rank < last) return false;
    else last = rank;
  }
  return true;
}

/** The same keys and values, the real ones in the real order, any others after them as they were. */
export function orderSysinfo<T extends Record<string, unknown>>(sysinfo: T): T {
  const out: Record<string, unknown> = {};
  for (const key of SYSINFO_KEY_ORDER) if (key in sysinfo) out[key] = sysinfo[key];
  for (const [key, value] of Object.entries(sysinfo)) if (!KNOWN.has(key)) out[key] = value;
  return out as T;
}

/** Keys a real CN prints only sometimes ("Admin IP" only where the admin NIC has an IP). */
const OPTIONAL_KEYS = new Set<string>(['Admin IP']);

/**
 * Add the keys an older sysinfo lacks, from what it has: the CPU counts from the legacy
 * "CPU Physical Cores" (sockets) and "CPU Total Cores" (threads; two per core when that
 * divides, as every mockcloud profile has it), "HVM API" from "Bhyve Capable", the admin tag
 * SmartOS defaults to, an unencrypted pool, no recovery configurations, and an empty
 * "SDC Agents" (the CN fills it from its agents). Present keys are never changed.
 */
export function completeSysinfo(sysinfo: Sysinfo): Sysinfo {
  // A file mockcloud wrote is complete and in order: keep JSON.parse's object, whose shape every
  // such CN shares. A rebuilt object would be one of 10,000 dictionary-mode copies.
  if (SYSINFO_KEY_ORDER.every((k) => k in sysinfo || OPTIONAL_KEYS.has(k)) && inOrder(sysinfo)) return sysinfo;
  const s: Record<string, unknown> = { ...sysinfo };
  const num = (key: string): number | undefined => {
    const n = typeof s[key] === 'number' ? (s[key] as number) : Number.parseInt(String(s[key] ?? ''), 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const fill = (key: string, value: unknown): void => {
    if (s[key] === undefined && value !== undefined) s[key] = value;
  };
  fill('HVM API', typeof s['Bhyve Capable'] === 'boolean' ? s['Bhyve Capable'] : undefined);
  fill('Admin NIC Tag', 'admin');
  const sockets = num('CPU Socket Count') ?? num('CPU Physical Cores');
  const threads = num('CPU Count') ?? num('CPU Total Cores');
  fill('CPU Socket Count', sockets);
  fill('CPU Count', threads);
  fill('CPU Online Count', threads);
  const smt = threads !== undefined && threads % 2 === 0 && threads >= 2 * (sockets ?? 1);
  fill('CPU Core Count', threads === undefined ? undefined : smt ? threads / 2 : threads);
  if (typeof s.Zpool === 'string' && s.Zpool) fill('Zpool Encrypted', false);
  // The real script prints it in every global zone: its guard tests a non-empty literal.
  fill('Zpool Recovery', {});
  const cores = num('CPU Core Count');
  fill('Psrinfo', { smt_enabled: String(cores !== undefined && threads !== undefined && cores < threads) });
  fill('SDC Agents', []);
  return orderSysinfo(s as Sysinfo);
}

/**
 * Almost every CN has the same agents: one frozen "SDC Agents" array per distinct list is
 * shared by all of them, instead of ten small objects per CN (10,000 CNs).
 */
const SHARED_SDC_AGENTS = new Map<string, readonly SdcAgent[]>();
const SHARED_SDC_AGENTS_MAX = 64;

/** "SDC Agents" for a CN's agents: name and version, as `json -a name version` prints them. */
export function sdcAgentsOf(agents: readonly AgentRecord[]): SdcAgent[] {
  const key = agents.map((a) => `${a.name}@${a.version ?? ''}`).join(',');
  let list = SHARED_SDC_AGENTS.get(key);
  if (!list) {
    list = Object.freeze(
      agents.map((a) => Object.freeze(a.version === undefined ? { name: a.name } : { name: a.name, version: a.version })),
    );
    if (SHARED_SDC_AGENTS.size >= SHARED_SDC_AGENTS_MAX) SHARED_SDC_AGENTS.clear();
    SHARED_SDC_AGENTS.set(key, list);
  }
  // Read-only in fact: nothing edits sysinfo in place (tasks rewrite the file and reload).
  return list as SdcAgent[];
}
