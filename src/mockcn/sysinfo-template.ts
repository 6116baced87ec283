/**
 * Building a new mock CN's sysinfo: every key a SmartOS CN's `sysinfo` prints, in its order
 * (smartos-live src/sysinfo), with the original mockcloud template's values (cn-agent-spec
 * §5.3) and the hardware of a profile. `"System Type": "Virtual"` is what marks a mock CN.
 */
import { randomBytes } from 'node:crypto';
import { randomStream, type RandomStream } from '../common/seeded-random.js';
import type { Sysinfo, SysinfoDisk, SysinfoNetworkInterface } from '../common/sysinfo.js';
import { BUILTIN_AGENTS } from './agents-dir.js';
import { sdcAgentsOf } from './sysinfo-keys.js';
import type { HardwareProfile } from './profiles.js';

export interface SysinfoInputs {
  uuid: string;
  profile: HardwareProfile;
  datacenterName: string;
  /** Used when the profile names no platform. */
  platform: string;
  /** dnet0, the admin NIC. */
  adminMac: string;
  /** The IP NAPI allocated to the admin NIC. */
  adminIp: string;
  /** dnet1, an untagged NIC (add_externals tags it later). */
  extraMac: string;
  /** Hostname prefix; the original's is "VC". */
  hostnamePrefix?: string;
  /** The hostname itself (a mirrored CN keeps its captured one); over the prefix's. */
  hostname?: string;
  /** Creation time in ms since the epoch; now by default. */
  now?: number;
  /**
   * The dev DC's headnode server: booted with `headnode=true` (what CNAPI reads its `headnode`
   * flag from), hostname "headnode", the "Headnode ID" a headnode's /.dcinfo gives sysinfo, and
   * on the external network (dnet1 tagged `external`) as a headnode is.
   */
  headnode?: boolean;
  /** dnet1 provides the `external` NIC tag (a dev DC's CNs are wired to its external network). */
  externalNic?: boolean;
  /** Where the disk names are drawn from (a seeded stream replays them); fresh entropy by default. */
  random?: RandomStream;
}

/** The OUI the original used for mock CN NICs. */
export const MOCK_MAC_OUI = '00:10:fe';

export function randomMockMac(random?: RandomStream): string {
  const b = random ? random.bytes(3) : randomBytes(3);
  return `${MOCK_MAC_OUI}:${[...b].map((x) => x.toString(16).padStart(2, '0')).join(':')}`;
}

/**
 * A CN's two NICs are one card's two ports, as on a real server: dnet0 (admin) has an even
 * last octet, dnet1 the next address. So the pair is as unique as the admin MAC, which NAPI
 * holds each of once, across every daemon that registers CNs with it.
 */
export function macPairFrom(drawn: string): { admin: string; extra: string } {
  const parts = drawn.toLowerCase().split(':');
  const last = parseInt(parts[5] ?? '0', 16) & 0xfe;
  const head = parts.slice(0, 5).join(':');
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  return { admin: `${head}:${hex(last)}`, extra: `${head}:${hex(last + 1)}` };
}

/**
 * A new CN's uuid (a random v4 uuid) begins with the last three octets of its admin MAC: its
 * hostname (`VC` + 8 hex) and serial number, made from that beginning, are then unique
 * wherever the admin MAC is, across every daemon of one NAPI.
 */
export function serverUuidFor(adminMac: string, random: RandomStream = randomStream(undefined, 'server-uuid')): string {
  const tail = adminMac.toLowerCase().split(':').slice(3).join('');
  return `${tail}${random.uuid().slice(6)}`;
}

/**
 * The MAC of NIC `dnet<index>` for index 2 and up (a profile with more than two NICs): the
 * admin MAC's last three octets behind a locally administered prefix of its own per index, so
 * it is as unique as the admin MAC.
 */
export function extraNicMac(adminMac: string, index: number): string {
  const tail = adminMac.toLowerCase().split(':').slice(3).join(':');
  const first = (0x02 | (index << 2)) & 0xff;
  return `${first.toString(16).padStart(2, '0')}:10:fe:${tail}`;
}

/** `c<idx>t5000<6 upper-case hex>d0`, like the original's disk names. */
export function randomDiskNames(count: number, random?: RandomStream): string[] {
  const draw = (n: number): string => (random ? random.bytes(n) : randomBytes(n)).toString('hex').toUpperCase();
  const names: string[] = [];
  const seen = new Set<string>();
  // One draw for all of them (a CN has 16 disks); more only on a clash.
  let pool = draw(3 * count);
  while (names.length < count) {
    if (pool.length < 6) pool = draw(3);
    const name = `c${names.length}t5000${pool.slice(0, 6)}d0`;
    pool = pool.slice(6);
    if (seen.has(name)) continue;
    seen.add(name);
    names.push(name);
  }
  return names;
}

export function hostnameFor(uuid: string, prefix = 'VC'): string {
  return `${prefix}${uuid.slice(0, 8).toUpperCase()}`;
}

const SDC_AGENTS_OF_NEW_CN = sdcAgentsOf([...BUILTIN_AGENTS].sort((a, b) => (a.name < b.name ? -1 : 1)));

export function buildSysinfo(input: SysinfoInputs): Sysinfo {
  const p = input.profile;
  const nowSec = Math.floor((input.now ?? Date.now()) / 1000);
  const diskNames = randomDiskNames(p.diskCount, input.random);
  const disks: Record<string, SysinfoDisk> = {};
  for (const name of diskNames) disks[name] = { 'Size in GB': p.diskSizeGB };
  const nics: Record<string, SysinfoNetworkInterface> = {
    dnet0: { ip4addr: input.adminIp, 'Link Status': 'up', 'NIC Names': ['admin'], 'MAC Address': input.adminMac },
  };
  const others = p.nics && p.nics.length > 0 ? p.nics : [{ tags: [] }];
  others.forEach((nic, i) => {
    const index = i + 1;
    const tags = [...nic.tags];
    if (index === 1 && (input.externalNic || input.headnode) && !tags.includes('external')) tags.unshift('external');
    nics[`dnet${index}`] = {
      ip4addr: '',
      'Link Status': 'up',
      'NIC Names': tags,
      'MAC Address': index === 1 ? input.extraMac : extraNicMac(input.adminMac, index),
    };
  });
  // A headnode-like CN of a profile: CNAPI reads `headnode` from this boot parameter.
  const headnodeBoot = input.headnode || p.headnode === true;
  return {
    'Live Image': p.platform ?? input.platform,
    'System Type': 'Virtual',
    // A string, as the real script prints it ("goofy, but compatible").
    'Boot Time': String(nowSec),
    'Datacenter Name': input.datacenterName,
    // Printed where /.dcinfo gives the headnode an id (smartos-live src/sysinfo).
    ...(input.headnode ? { 'Headnode ID': 0 } : {}),
    'SDC Version': '7.0',
    Manufacturer: p.manufacturer,
    Product: p.product,
    'Serial Number': input.uuid.slice(0, 8).toUpperCase(),
    'SKU Number': p.skuNumber,
    'HW Version': p.hwVersion,
    'HW Family': p.hwFamily,
    Setup: 'true',
    'VM Capable': p.vmCapable ?? true,
    'Bhyve Capable': p.bhyveCapable ?? true,
    'Bhyve Max Vcpus': p.bhyveMaxVcpus,
    'HVM API': true,
    'CPU Type': p.cpuType,
    'CPU Virtualization': p.cpuVirtualization,
    'CPU Physical Cores': p.cpuPhysicalCores,
    'Admin NIC Tag': 'admin',
    'Admin IP': input.adminIp,
    UUID: input.uuid,
    Hostname: input.headnode ? 'headnode' : (input.hostname ?? hostnameFor(input.uuid, input.hostnamePrefix)),
    'CPU Total Cores': p.cpuTotalCores,
    'CPU Socket Count': p.cpuPhysicalCores,
    'CPU Core Count': p.cpuCoreCount,
    'CPU Online Count': p.cpuTotalCores,
    'CPU Count': p.cpuTotalCores,
    'MiB of Memory': String(p.memoryMiB),
    Zpool: 'zones',
    'Zpool Encrypted': false,
    'Zpool Disks': diskNames.join(','),
    'Zpool Profile': p.zpoolProfile,
    'Zpool Creation': nowSec,
    'Zpool Size in GiB': p.zpoolSizeGiB,
    'Zpool Recovery': {},
    Disks: disks,
    'Boot Parameters': headnodeBoot
      ? { console: 'ttyb', boot_args: '', bootargs: '', headnode: 'true' }
      : { console: 'ttyb', boot_args: '', bootargs: '' },
    Psrinfo: { smt_enabled: String(p.cpuCoreCount < p.cpuTotalCores) },
    // The agents every new CN starts with, in the order the CN lists them (agents-dir.ts).
    'SDC Agents': SDC_AGENTS_OF_NEW_CN.map((a) => ({ ...a })),
    'Network Interfaces': nics,
    'Virtual Network Interfaces': {},
    'Link Aggregations': {},
  };
}

/**
 * Whether a sysinfo is the dev DC's headnode server's: SmartOS passes the `headnode=true` boot
 * parameter to headnodes only (CNAPI sets a server's `headnode` from it,
 * ModelServer.updateFromSysinfo), and the headnode's /.dcinfo gives it a "Headnode ID". A
 * profile's headnode-like CN has the boot parameter (DAPI skips it) but no "Headnode ID": it is
 * one more CN of the fleet, counted and deleted as any other.
 */
export function isHeadnodeSysinfo(sysinfo: Pick<Sysinfo, 'Boot Parameters'>): boolean {
  return sysinfo['Boot Parameters']?.headnode === 'true' && (sysinfo as Record<string, unknown>)['Headnode ID'] !== undefined;
}

/** sysinfo.json as create-server wrote it: 4-space indent and a trailing newline. */
export function serializeNewSysinfo(sysinfo: Sysinfo): string {
  return `${JSON.stringify(sysinfo, null, 4)}\n`;
}
